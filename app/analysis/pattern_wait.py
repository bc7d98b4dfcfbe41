"""A pair's own page waits while the GPU pattern that would explain it may still be forming.

A sick GPU's pairs go bad over a sweep or two, not at once: the pair tests run one after
another, so the pairs measured before the trouble began read fine in that sweep, and a slow
pair turns degraded only after its sustain. Meanwhile the GPU is bad with *some* peers, the
pattern of `attribution.py` (bad with every peer) does not hold yet, and its bad pairs read
as pair faults that would page, one per pair, and resolve a sweep later when the pattern
forms: transient pages, blaming the healthy peers too.

So a bad pair that is its own fault (explained by no GPU, no cause of its own such as P2P
lost) is *held* while, for one of its GPUs, every peer measured with it is either bad or
still *open*: low but not yet sustained, or not measured since that GPU's trouble began
(its newest sample is older than the start of the GPU's oldest bad pair). A pair fault
proper is held at most until the GPU's other pairs have been measured once more, and every
hold ends after `wait_s` (PEERWATCH_PATTERN_WAIT_S): the page then goes out anyway.

The hold is kept in the pair row's facts, so it survives judgements and is bounded:
`bad_from` (when the pair's trouble began, by its samples), `waits_since` (when the hold
began, by the server's clock; kept after the limit so the hold does not start over) and
`waits_for` (the reason, while held) with `waits_on` (the GPU). The pair rules read
`waits_for`; /metrics exports it as `peerwatch_pair_page_held`. Pure: judged pairs and
stored facts in, facts out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from peerwatch.app.analysis.attribution import BAD
from peerwatch.app.analysis.health import PairJudgement, TestJudgement
from peerwatch.app.analysis.verdict import Verdict

PairFacts = Mapping[tuple[int, int], Mapping[str, Any]]
HOLD_KEYS = ("bad_from", "waits_since", "waits_for", "waits_on")


@dataclass(frozen=True)
class Forming:
    """A GPU whose pattern may still be forming: how many peers are bad, how many open."""

    gpu: int
    bad: int
    open: int

    def words(self) -> str:
        return (f"GPU{self.gpu}'s pattern: {self.bad} of its {self.bad + self.open} peers "
                f"bad, {self.open} not yet judged since")


def _candidate(p: PairJudgement) -> bool:
    """A bad pair that would page as its own fault."""
    return p.verdict in BAD and p.explained_by is None and p.cause is None


def _test_start(t: TestJudgement) -> datetime | None:
    if t.verdict not in BAD:
        return None
    if t.low_since is not None:
        return t.low_since
    return t.latest.at if t.latest is not None else None


def bad_from(p: PairJudgement, before: Mapping[str, Any] | None) -> datetime | None:
    """When the pair's trouble began, by its samples: its low run's start, or its first
    failure (kept from the stored facts: a test failing again shows only its newest)."""
    starts = [s for t in p.tests if (s := _test_start(t)) is not None]
    stored = (before or {}).get("bad_from")
    if stored is not None:
        starts.append(datetime.fromisoformat(stored))
    return min(starts, default=None)


def _newest_at(p: PairJudgement) -> datetime | None:
    return max((t.latest.at for t in p.tests if t.latest is not None), default=None)


def _open(p: PairJudgement, since: datetime | None) -> bool:
    """Not bad (yet): low but not sustained, or not measured since `since`."""
    if any(t.low_since is not None for t in p.tests):
        return True
    newest = _newest_at(p)
    return since is not None and newest is not None and newest < since


def forming(pairs: Sequence[PairJudgement], starts: Mapping[tuple[int, int], datetime]
            ) -> dict[int, Forming]:
    """GPUs (measured with two or more peers) whose every peer is bad or open, some open."""
    own = [p for p in pairs if p.verdict is not Verdict.UNKNOWN and p.explained_by is None
           and p.cause is None]
    by_gpu: dict[int, dict[int, list[PairJudgement]]] = {}
    for p in own:
        for a, b in ((p.src, p.dst), (p.dst, p.src)):
            by_gpu.setdefault(a, {}).setdefault(b, []).append(p)
    out = {}
    for gpu, peers in sorted(by_gpu.items()):
        began = min((starts[(p.src, p.dst)] for ps in peers.values() for p in ps
                     if (p.src, p.dst) in starts), default=None)
        bad = {peer for peer, ps in peers.items() if any(p.verdict in BAD for p in ps)}
        still = {peer for peer, ps in peers.items() if peer not in bad
                 and any(_open(p, began) for p in ps)}
        if len(peers) >= 2 and bad and still and bad | still == set(peers):
            out[gpu] = Forming(gpu, len(bad), len(still))
    return out


def hold_facts(pairs: Sequence[PairJudgement], before: PairFacts, now: datetime,
               wait_s: float) -> dict[tuple[int, int], dict[str, str | int]]:
    """(src, dst) -> the hold facts to store with each bad own-fault pair (`bad_from`;
    `waits_since` and `waits_for` while a GPU pattern may still be forming)."""
    starts = {(p.src, p.dst): s for p in pairs if _candidate(p)
              and (s := bad_from(p, before.get((p.src, p.dst)))) is not None}
    growing = forming(pairs, starts)
    out: dict[tuple[int, int], dict[str, str | int]] = {}
    for p in pairs:
        key = (p.src, p.dst)
        if key not in starts:
            continue
        facts: dict[str, str | int] = {"bad_from": starts[key].isoformat()}
        gpu = next((g for g in (p.src, p.dst) if g in growing), None)
        if gpu is not None:
            since = (before.get(key) or {}).get("waits_since") or now.isoformat()
            facts["waits_since"] = since
            if (now - datetime.fromisoformat(since)).total_seconds() < wait_s:
                facts["waits_for"] = growing[gpu].words()
                facts["waits_on"] = gpu
        out[key] = facts
    return out


def held(pair_facts: PairFacts) -> set[tuple[int, int]]:
    """The pairs whose own page waits now."""
    return {key for key, f in pair_facts.items() if f.get("waits_for")}


def held_why(facts: Mapping[str, Any]) -> str:
    """The `why` label of `peerwatch_pair_page_held`: few values, stable while held."""
    return f"GPU{facts.get('waits_on')} pattern forming"


def without_held(pairs: Sequence[PairJudgement], holds: set[tuple[int, int]]
                 ) -> list[PairJudgement]:
    """The pairs as a GPU's fabric findings see them: a held pair answers to no GPU's
    pair-fault finding (PeerCopiesFailing at each end) until its pattern is known. It is
    given a cause, which keeps it out of those findings; its stored verdict is unchanged."""
    return [replace(p, cause="page held while a GPU pattern forms")
            if (p.src, p.dst) in holds else p for p in pairs]
