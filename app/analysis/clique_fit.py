"""Which clique of which NVLink domain can host a job of k healthy GPUs, and on which trays.

A job's GPUs must share one clique to talk over NVLink. For each clique this counts the
healthy GPUs of its fresh trays (stored verdicts, `domains.Tray.healthy_gpus`; of the two
GPUs of a pair fault, only one: they must not share a job, `pair_faults.py`) and, where
there are k, picks trays fullest first so the job spans as few hosts as possible. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from peerwatch.app.analysis.domains import DomainRollup
from peerwatch.app.analysis.pair_faults import apart_among, largest_set


@dataclass(frozen=True)
class TrayPick:
    host: str
    gpus: tuple[int, ...]


@dataclass(frozen=True)
class CliqueFit:
    domain: str
    clique_id: int | None
    healthy_gpus: int
    picks: tuple[TrayPick, ...]  # the trays and GPUs to use, fullest trays first

    @property
    def hosts(self) -> int:
        return len(self.picks)


@dataclass(frozen=True)
class CliqueMiss:
    domain: str
    clique_id: int | None
    reason: str


def _pick(free: list[tuple[str, list[int]]], wanted: int) -> tuple[TrayPick, ...]:
    picks = []
    for host, gpus in sorted(free, key=lambda hg: (-len(hg[1]), hg[0])):
        if wanted <= 0:
            break
        take = gpus[:wanted]
        picks.append(TrayPick(host, tuple(take)))
        wanted -= len(take)
    return tuple(picks)


def _apart_words(d: DomainRollup, clique: int | None) -> str:
    """Words for a miss where pair faults left GPUs out of the count: 'that may share a
    job (GPU0 and GPU1 of tray07 kept apart: a pair fault)'."""
    kept = [f"GPU{a} and GPU{b} of {t.host}" for t in d.trays
            for a, b in apart_among(t.healthy_gpus(clique), t.apart)]
    return f" that may share a job ({', '.join(kept)} kept apart: a pair fault)" if kept else ""


def fit_cliques(domains: Iterable[DomainRollup],
                wanted: int) -> tuple[list[CliqueFit], list[CliqueMiss]]:
    """(cliques that can host `wanted` healthy GPUs, fewest hosts first; the others, each
    with why not)."""
    if wanted < 1:
        raise ValueError(f"a job needs at least one GPU, got {wanted}")
    fits: list[CliqueFit] = []
    misses: list[CliqueMiss] = []
    for d in domains:
        for c in d.cliques:
            free = [(t.host, largest_set(t.healthy_gpus(c.clique_id), t.apart))
                    for t in d.trays]  # a pair fault's two GPUs: one end offered
            free = [(h, g) for h, g in free if g]
            have = sum(len(g) for _, g in free)
            if have < wanted:
                misses.append(CliqueMiss(d.domain, c.clique_id, f"{have} healthy GPUs of "
                                         f"{c.gpus}{_apart_words(d, c.clique_id)}, {wanted} "
                                         "asked for"))
            else:
                fits.append(CliqueFit(d.domain, c.clique_id, have, _pick(free, wanted)))
    fits.sort(key=lambda f: (f.hosts, -f.healthy_gpus, f.domain, f.clique_id or 0))
    return fits, misses
