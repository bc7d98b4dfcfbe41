"""What explains a slow or bad pair, read from the server's own judgement of one host: the
clauses every pair rule (`rules_slow_pairs.py`) and the GPU slowness rules
(`rules_fabric.py`, `rules_fleet.py`) leave out, so that one fault pages once, from the
object at fault. Their PromQL twins are the
`peerwatch:gpu_fault_explains_pairs`, `peerwatch:gpu_pcie_downtrained` and
`peerwatch:pair_page_held` recording rules (promql_records.py).
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.rules_events import event_explained
from peerwatch.app.analysis.fleet_peers import pcie_downtrained
from peerwatch.app.analysis.pattern_wait import held
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import LinkState


def explained_gpus(ctx: HostContext) -> dict[int, str]:
    """GPUs whose own fault explains slow pairs, and the fault: NVLinks down or lost,
    growing link errors, P2P lost, or the GPU missing. A pair alert would only repeat them."""
    why: dict[int, str] = {g: "missing" for g in ctx.fabric.missing_gpus}
    why.update(event_explained(ctx))  # an Xid fault is the page (rules_events.py)
    for j in ctx.links:
        if j.verdict is not Verdict.HEALTHY:
            why.setdefault(j.gpu, f"NVLink {j.link} {j.verdict.value}")
    for gpu, had in ctx.ports_had.items():
        up = sum(1 for p in ctx.fabric.links_of(gpu) if p.state is LinkState.UP)
        if gpu in ctx.fabric.gpus and up < had:
            why.setdefault(gpu, f"{up} of {had} NVLinks up")
    return why


def attributed_pairs(ctx: HostContext) -> set[tuple[int, int]]:
    """Pairs the stored verdicts attribute to a GPU (`analysis/attribution.py`): a GPU bad
    with every peer, or one whose fabric or links make its pairs untrustworthy. That GPU's
    alert is the page; a pair alert would blame its healthy peer too."""
    return {(p.src, p.dst) for p in ctx.health.judgement.pairs if p.explained_by is not None}


def held_pairs(ctx: HostContext) -> set[tuple[int, int]]:
    """Pairs whose own page waits while a GPU pattern may still be forming
    (`analysis/pattern_wait.py`, at most PEERWATCH_PATTERN_WAIT_S); /health says so."""
    return held(ctx.health.pair_facts)


def throttled_gpus(ctx: HostContext) -> set[int]:
    """GPUs held below their clocks most of the time: GPUThrottled is their page, and their
    slowness (with every peer, or against their fleet peers) is its, not a second page."""
    return {gpu for gpu, facts in ctx.health.gpu_facts.items() if facts.get("throttle")}


def pcie_short_gpus(ctx: HostContext) -> set[int]:
    """GPUs whose PCIe link trained below its maximum: what slows staged copies."""
    return {gpu for gpu, info in ctx.fabric.gpus.items() if pcie_downtrained(info.pcie)}


def nvlink_joins(ctx: HostContext, src: int, dst: int) -> bool:
    pair = ctx.fabric.pairs.get((src, dst)) or ctx.fabric.pairs.get((dst, src))
    return pair is not None and pair.nvlink_width > 0


def host_below(ctx: HostContext) -> bool:
    """The host as a whole is below its fleet peers: one host alert, no pair or GPU ones."""
    return bool(ctx.health.peers.get("below"))
