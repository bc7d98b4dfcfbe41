"""Which object a bad pair's trouble belongs to: the pair itself, or a GPU it runs through.

Judging each pair on its own blames both ends of every failing pair, so one sick GPU read
as eight. Attribution runs after the pair verdicts and before the GPU verdicts:

- *not trusted*: a pair through a GPU whose own state makes its P2P untrustworthy (fabric
  not COMPLETED, registration failed, fabric unhealthy, NVLinks down or unlisted, the GPU
  missing) is never healthy: a healthy-measured one reads degraded, "not trusted: GPU6
  fabric in progress", and every one of them is *explained by* that GPU;
- *pattern*: of the remaining bad pairs, a GPU that is bad with every peer it was measured
  with (at least two peers) is the fault; its pairs are explained by it;
- what is left bad is a *pair fault*: the pair is the object at fault (P2P lost between two
  GPUs, copies failing or slow between two GPUs whose other pairs work).

An explained pair keeps its verdict (it is not healthy) but blames only the GPU that
explains it: that GPU's alert is the page, its peers stay healthy and offerable. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from peerwatch.app.analysis.fabric_state import GpuFabricVerdict
from peerwatch.app.analysis.health import CONFOUNDED, PairJudgement
from peerwatch.app.analysis.verdict import Verdict

BAD = (Verdict.DEGRADED, Verdict.DOWN)
UNTRUSTED_KINDS = ("registration", "status", "health", "links")


@dataclass(frozen=True)
class PatternFault:
    """A GPU bad with every peer: failing (copies error out) or slow, and why in words."""

    failing: bool
    text: str


@dataclass(frozen=True)
class Attribution:
    """The pairs with their explanations, and the GPUs found at fault by pattern."""

    pairs: tuple[PairJudgement, ...]
    pattern: Mapping[int, PatternFault]  # GPU -> "copies fail with every peer (3 of 3)"


def explained_elsewhere(p: PairJudgement, gpu: int) -> bool:
    """The pair's state is another GPU's fault: it does not count against `gpu`."""
    return p.explained_by is not None and p.explained_by != gpu


def own_fault(p: PairJudgement) -> bool:
    """A bad pair that is its own object at fault (a pair fault), explained by no GPU."""
    return p.verdict in BAD and p.explained_by is None


def _untrusted(p: PairJudgement, gpu: int, why: str) -> PairJudgement:
    cause = f"GPU{gpu} {why}"
    if p.verdict is Verdict.HEALTHY:
        return replace(p, verdict=Verdict.DEGRADED, explained_by=gpu, cause=cause,
                       reason=f"GPU{p.src}->GPU{p.dst} not trusted: {cause} ({p.reason})")
    return replace(p, explained_by=gpu, cause=cause,
                   reason=f"GPU{p.src}->GPU{p.dst} explained by {cause}: {p.reason}")


def _peers(pairs: Iterable[PairJudgement]) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
    """({GPU: peers measured with it}, {GPU: peers it is bad with}), either direction."""
    measured: dict[int, set[int]] = {}
    bad: dict[int, set[int]] = {}
    for p in pairs:
        if p.verdict is Verdict.UNKNOWN:
            continue
        for a, b in ((p.src, p.dst), (p.dst, p.src)):
            measured.setdefault(a, set()).add(b)
            if p.verdict in BAD:
                bad.setdefault(a, set()).add(b)
    return measured, bad


def _failing(p: PairJudgement) -> bool:
    """Down, or its newest attempt of some test failed (once is degraded, still failing)."""
    return p.verdict is Verdict.DOWN or any(
        t.latest is not None and t.latest.error is not None for t in p.tests)


def _pattern(pairs: Sequence[PairJudgement]) -> dict[int, PatternFault]:
    """GPUs bad with every peer measured (two or more): the GPU, not its pairs, is at fault.
    Pairs with a cause of their own (P2P unavailable) stay pair faults."""
    own = [p for p in pairs if p.explained_by is None and p.cause is None]
    measured, bad = _peers(own)
    out = {}
    for gpu, peers in sorted(measured.items()):
        if len(peers) < 2 or bad.get(gpu, set()) != peers:
            continue
        mine = [p for p in own if gpu in (p.src, p.dst) and p.verdict in BAD]
        failing = any(_failing(p) for p in mine)
        worst = max(mine, key=_failing)
        out[gpu] = PatternFault(failing, f"copies {'fail' if failing else 'run slow'} with "
                                         f"every peer ({len(peers)} of {len(peers)}), worst "
                                         f"{worst.reason}")
    return out


def trust(pairs: Sequence[PairJudgement], causes: Mapping[int, str]) -> list[PairJudgement]:
    """The pairs through an untrusted GPU explained by it; `causes`: GPU -> why pairs
    through it cannot be trusted ("fabric in progress")."""
    out = []
    for p in pairs:
        gpu = next((g for g in (p.src, p.dst) if g in causes), None)
        out.append(p if gpu is None else _untrusted(p, gpu, causes[gpu]))
    return out


def attribute(pairs: Sequence[PairJudgement], causes: Mapping[int, str]) -> Attribution:
    """Untrusted GPUs first, then the pattern (`by_pattern`). The judgement puts the Xid
    step (`xid_attribution.py`) between the two."""
    return by_pattern(trust(pairs, causes))


def by_pattern(out: Sequence[PairJudgement]) -> Attribution:
    """The remaining own bad pairs of a GPU bad with every peer, explained by it."""
    pattern = _pattern(out)
    final = []
    for p in out:
        gpu = next((g for g in (p.src, p.dst) if g in pattern), None)
        if gpu is not None and p.explained_by is None and p.cause is None and p.verdict in BAD:
            how = "fail" if pattern[gpu].failing else "run slow"
            cause = f"GPU{gpu}, whose copies {how} with every peer"
            p = replace(p, explained_by=gpu, cause=cause,
                        reason=f"GPU{p.src}->GPU{p.dst} explained by {cause}: {p.reason}")
        final.append(p)
    return Attribution(tuple(final), pattern)


def untrusted_causes(fabric: Iterable[GpuFabricVerdict], missing: Iterable[int]
                     ) -> dict[int, str]:
    """GPU -> the first reason its pairs cannot be trusted: missing from the inventory, or
    a fabric finding of an untrusting kind (fabric not ready, its NVLinks short)."""
    out = {g: "missing from the newest inventory" for g in missing}
    for v in fabric:
        for f in v.findings:
            if f.kind in UNTRUSTED_KINDS:
                out.setdefault(v.gpu, f.short or f.what)
    return out


def pair_facts(p: PairJudgement) -> dict[str, int | str]:
    """What a stored pair row keeps of its attribution (its `facts`)."""
    out: dict[str, int | str] = {}
    if p.explained_by is not None:
        out["explained_by"] = p.explained_by
    if p.cause is not None:
        out["cause"] = p.cause
    if p.by_event:
        out["by_event"] = 1
    if p.verdict is Verdict.UNKNOWN and CONFOUNDED in p.reason:
        out["unjudged"] = "throttle"  # a test confounded by a throttled GPU (health.py)
    return out
