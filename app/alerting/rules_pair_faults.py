"""The page of a pair fault: one alert per unordered pair, never one per GPU or direction.

    PairCopiesFailing  critical  copies fail between GPU a and GPU b (a < b) while both work
                                 with their other peers (labels host, gpu = a, peer_gpu = b)

A pair at fault as a pair (`app/analysis/pair_faults.py`) leaves both GPUs healthy: the
scheduler offers them, never together. Only where its premises hold: a pair through a GPU
whose fabric or links are not as they should be is explained by that GPU (its alert pages),
a pair whose P2P is unavailable is P2PAccessLost's, and a GPU failing with every peer is
PeerCopiesFailing's. It reads the kind stored with the pair's rows (never judging again);
its PromQL twin reads what the server's /metrics exports of it (`peerwatch_pair_fault`).
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.promql import Twin
from peerwatch.app.alerting.rule import Finding, Rule, dashboard_path
from peerwatch.app.analysis.pair_faults import COPIES_FAIL, stored_faults


def pair_copies_failing(ctx: HostContext) -> list[Finding]:
    faults = stored_faults((s, d, f) for (s, d), f in ctx.health.pair_facts.items())
    out = []
    for (a, b), kind in sorted(faults.items()):
        if kind != COPIES_FAIL:
            continue
        reasons = [p.reason for p in (ctx.health.pair(a, b), ctx.health.pair(b, a))
                   if p is not None and p.reason]
        alone = not _other_peers(ctx, a, b)
        premise = ("on a board with no other peer measured, so it cannot be told from a "
                   "fault of either GPU" if alone else "while both work with their other "
                   "peers")
        ends = "have no other peer measured" if alone else "each work with every other peer"
        out.append(Finding(
            labels={"host": ctx.name, "gpu": str(a), "peer_gpu": str(b)},
            summary=f"Copies fail between GPU{a} and GPU{b} on {ctx.name} {premise}",
            description=f"{'; '.join(reasons)}. A pair fault: GPU{a} and GPU{b} {ends}, "
                        "so both stay schedulable but never in the "
                        "same job (/scheduler/hosts lists them in `apart`). Reset both GPUs "
                        "and rerun the sweep; if it stays, suspect the NVLink path between "
                        "them.",
            dashboard=dashboard_path(ctx.name, pair=(a, b)), value=0.0))
    return out


def _other_peers(ctx: HostContext, a: int, b: int) -> bool:
    """Either GPU of the pair was measured with some third GPU: what makes the pattern
    (its other pairs work) evidence; on a 2-GPU board there is none to say so."""
    return any({p.src, p.dst} & {a, b} and {p.src, p.dst} != {a, b}
               for p in ctx.health.judgement.pairs)


PAIR_FAULT_RULES: tuple[Rule, ...] = (
    Rule("PairCopiesFailing", "critical", 0.0, pair_copies_failing,
         "a pair fault ([app/analysis/pair_faults.py](../app/analysis/pair_faults.py)): copies "
         "fail between two GPUs that both work with their other peers, explained by no GPU "
         "(fabric, links, presence as they should be) and with P2P supported. One alert per "
         "unordered pair (`gpu` the lower index, `peer_gpu` the higher), never one per GPU or "
         "direction; both GPUs stay healthy and schedulable, never in one job "
         "(`/scheduler/hosts` lists them in `apart`, [scheduler.md](scheduler.md)). PromQL: "
         '`peerwatch_pair_fault{kind="copies_fail"}`. A pair whose page is held while a GPU '
         "pattern may still be forming (`waits_for`) is no pair fault until the hold ends",
         label_names="host, gpu, peer_gpu",
         series=("peerwatch_gpu_verdict", "peerwatch_pair_fault"),
         twins=(
             Twin(
                 note=(
                     "The server's stored pair verdicts: copies fail between two GPUs whose "
                     "other pairs work (app/analysis/pair_faults.py). One alert per unordered "
                     "pair, `gpu` the lower index; both GPUs stay schedulable, never in the "
                     "same job. The server exports only pairs whose premises hold (no GPU fault "
                     "explains them, P2P supported). This one on a board with a third judged "
                     "GPU (the server's `peerwatch_gpu_verdict`), whose other pairs are what "
                     "the premise rests on; the next on a 2-GPU board, where no other peer is "
                     "measured (the server's words for each: app/alerting/rules_pair_faults.py)."
                 ),
                 expr=(
                     'max by (host, gpu, peer_gpu) (peerwatch_pair_fault{kind="copies_fail"}) '
                     "== 1\n"
                     "and on (host) (count by (host) (group by (host, gpu) "
                     "(peerwatch_gpu_verdict)) > 2)\n"
                 ),
                 for_="0m",
                 annotations={
                     "summary": (
                         "Copies fail between GPU{{ $labels.gpu }} and "
                         "GPU{{ $labels.peer_gpu }} on {{ $labels.host }} while both work with "
                         "their other peers"
                     ),
                     "description": (
                         "A pair fault on {{ $labels.host }}: copies between "
                         "GPU{{ $labels.gpu }} and GPU{{ $labels.peer_gpu }} fail while each "
                         "works with its other peers. Both stay schedulable but never in the "
                         "same job (/scheduler/hosts lists them in `apart`). Reset both GPUs "
                         "and rerun the sweep; if it stays, suspect the NVLink path between them."
                     ),
                     "dashboard": (
                         "/#/host/{{ $labels.host }}?pair={{ $labels.gpu }}-{{ $labels.peer_gpu "
                         "}}"
                     ),
                 },
             ),
             Twin(
                 note=(
                     "The same on a board of two GPUs: no other peer measured, so the pattern "
                     "cannot tell it from a fault of either GPU, and the text does not claim "
                     "it. `other_peers` keeps the two rules apart."
                 ),
                 expr=(
                     'max by (host, gpu, peer_gpu) (peerwatch_pair_fault{kind="copies_fail"}) '
                     "== 1\n"
                     "unless on (host) (count by (host) (group by (host, gpu) "
                     "(peerwatch_gpu_verdict)) > 2)\n"
                 ),
                 for_="0m",
                 labels={"other_peers": "none"},
                 annotations={
                     "summary": (
                         "Copies fail between GPU{{ $labels.gpu }} and "
                         "GPU{{ $labels.peer_gpu }} on {{ $labels.host }} on a board with no "
                         "other peer measured, so it cannot be told from a fault of either GPU"
                     ),
                     "description": (
                         "A pair fault on {{ $labels.host }}: copies between "
                         "GPU{{ $labels.gpu }} and GPU{{ $labels.peer_gpu }} fail, and they "
                         "have no other peer measured. Both stay schedulable but never in the "
                         "same job (/scheduler/hosts lists them in `apart`). Reset both GPUs "
                         "and rerun the sweep; if it stays, suspect the NVLink path between them."
                     ),
                     "dashboard": (
                         "/#/host/{{ $labels.host }}?pair={{ $labels.gpu }}-{{ $labels.peer_gpu "
                         "}}"
                     ),
                 },
             ),
         )),
)
