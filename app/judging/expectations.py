"""What each judged (pair, test) of a host should measure, worked out once per inventory.

Every sweep of an 8-GPU host judges ~416 keys, and each needs two figures from the
topology: the full-width expectation its verdict is judged against, and whether a healthy
value may teach its baseline (not while the pair runs with NVLinks lost, nor a value far
below what it should reach now). Both follow from the inventory alone, which rarely
changes, yet working them out from `HostFabric` every sweep was a visible share of its CPU.

`ExpectationCache` (one per app, in `session.info`, as the inventory memo) keeps each
host's figures under the host's `inventory_changed_at`: the ingest moves that stamp
whenever any inventory value a figure is worked out from changes (GPUs, their PCIe links,
NVLink ports, pairs; `services/inventory.py`), whichever replica stored it, so a figure is
reused exactly while the inventory it came from holds. A host without the stamp, or a
session without a cache, works them out every time.

The fabric they come from (GPUs, ports, pairs as the wire schema's values, ~200 rows read
and built every sweep, another ~5 %) is kept under the same stamp: a judgement of an
unchanged inventory reads none of its rows. Only a fabric with no GPU gone is kept (a
missing GPU is its ORM row, which belongs to the session that read it).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import NamedTuple

from sqlalchemy.orm import Session

from peerwatch.app.analysis.expected import Expectation
from peerwatch.app.queries.fabric import load_fabric
from peerwatch.app.records.fabric import HostFabric
from peerwatch.app.records.keys import PairKey
from peerwatch.app.store.tables.inventory import Host

CACHE_KEY = "peerwatch.expectations"
HOSTS_KEPT = 10_000  # one inventory's figures per host; a fleet this size is ~40 MB


class KeyExpectation(NamedTuple):
    """One key's figures: the full-width expectation it is judged against; whether its
    pair runs with NVLinks lost (then no value teaches the baseline); the expectation with
    the links up now, which a teaching value must reach a share of."""

    full: Expectation | None
    narrowed: bool
    now: float | None


def work_out(fabric: HostFabric, key: PairKey) -> KeyExpectation:
    src, dst, test = key
    pair = fabric.pairs.get((src, dst))
    narrowed = pair is not None and pair.nvlink_width < fabric.full_width(src, dst)[0]
    now = None if narrowed else fabric.expectation(test, src, dst)
    return KeyExpectation(fabric.full_expectation(test, src, dst), narrowed,
                          now.value if now is not None else None)


class Expectations:
    """The figures of one host's keys under its current inventory, worked out on first use."""

    def __init__(self, fabric: HostFabric, known: dict[PairKey, KeyExpectation]) -> None:
        self._fabric = fabric
        self._known = known

    def of(self, key: PairKey) -> KeyExpectation:
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = work_out(self._fabric, key)
        return found


@dataclass
class _Kept:
    """One host's inventory as last judged: its stamp, fabric and figures."""

    stamp: datetime
    fabric: HostFabric
    figures: dict[PairKey, KeyExpectation] = field(default_factory=dict)


class ExpectationCache:
    """Each host's fabric and figures for the inventory stamp they were read under."""

    def __init__(self) -> None:
        self._hosts: dict[int, _Kept] = {}

    def fabric(self, session: Session, host: Host) -> tuple[HostFabric, Expectations]:
        """The host's fabric (read again only when its inventory changed) and its figures."""
        stamp = host.inventory_changed_at
        kept = self._hosts.get(host.id)
        if stamp is not None and kept is not None and kept.stamp == stamp:
            fabric = replace(kept.fabric, host=host)  # the kept values, this session's row
            return fabric, Expectations(fabric, kept.figures)
        fabric = load_fabric(session, host)
        if stamp is None or fabric.missing_gpus:
            self._hosts.pop(host.id, None)
            return fabric, Expectations(fabric, {})
        if len(self._hosts) >= HOSTS_KEPT:
            self._hosts.clear()  # a bound, not an eviction policy: refilled in a sweep
        kept = self._hosts[host.id] = _Kept(stamp, fabric)
        return fabric, Expectations(fabric, kept.figures)
