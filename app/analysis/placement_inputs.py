"""Turn what the server stores (inventory, latest results, health) into a `FabricView`.

Pure, so that the scheduler route, the tests and anyone holding a `Report` build placement's
input the same way: expected bandwidth per pair from `expected.py`, the kind of each pair's path
from its `PairInfo`, a socket locality per GPU, and the measured matrix from stored samples
(uncontended `ce_write` first, then half of an uncontended `ce_bidir`, contended values only
when nothing else exists).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from peerwatch.app.analysis.expected import expected
from peerwatch.app.analysis.placement_types import FabricView, GpuState, LinkKind, Pair, PairVerdict
from peerwatch.probes.report import Inventory, LinkState, PairInfo, TestName

MATRIX_TESTS: dict[TestName, float] = {TestName.CE_WRITE: 1.0, TestName.CE_BIDIR: 0.5}


def link_kind(pair: PairInfo) -> LinkKind:
    if pair.nvlink_width and pair.can_access_peer is not False:
        return LinkKind.NVSWITCH if pair.via_nvswitch else LinkKind.NVLINK
    return LinkKind.PCIE


def locality(numa_node: int | None, cpu_affinity: str | None) -> str | None:
    """GPUs with the same locality hang off the same CPU socket."""
    if numa_node is not None:
        return f"numa{numa_node}"
    return f"cpus {cpu_affinity}" if cpu_affinity else None


def expected_matrix(inventory: Inventory) -> dict[Pair, float]:
    """Per ordered pair, the CE copy rate healthy hardware of that shape reaches."""
    gpus = {g.index: g for g in inventory.gpus}
    speeds: dict[int, float] = {}
    for port in inventory.nvlinks:
        if port.state is LinkState.UP and port.speed_bps:
            speeds[port.gpu] = min(speeds.get(port.gpu, port.speed_bps), port.speed_bps)
    out: dict[Pair, float] = {}
    for p in inventory.pairs:
        if p.src not in gpus or p.dst not in gpus:
            continue
        known = [speeds[g] for g in (p.src, p.dst) if g in speeds]
        e = expected(TestName.CE_WRITE, p, gpus[p.src], gpus[p.dst], min(known, default=None))
        if e is not None:
            out[(p.src, p.dst)] = e.value
    return out


class SampleLike(Protocol):
    """One stored result of a pair test (`app.analysis.health.Sample` fits)."""

    @property
    def at(self) -> datetime: ...
    @property
    def value(self) -> float | None: ...
    @property
    def contended(self) -> bool: ...
    @property
    def error(self) -> str | None: ...


def measured_matrix(
    samples: Mapping[tuple[int, int, TestName], Sequence[SampleLike]],
) -> tuple[dict[Pair, float], datetime | None]:
    """Per ordered pair the best evidence of its copy rate, and when the newest one was taken.

    Evidence, best first: the newest uncontended `ce_write`, the newest uncontended `ce_bidir`
    halved, then the same two contended (someone else's traffic shared the links, so the value
    understates the pair, but it beats knowing nothing). Failed samples are no evidence.
    """
    best: dict[Pair, tuple[int, datetime, float]] = {}
    for (src, dst, test), rows in samples.items():
        scale = MATRIX_TESTS.get(test)
        if scale is None:
            continue
        for row in rows:
            if row.error is not None or row.value is None:
                continue
            rank = list(MATRIX_TESTS).index(test) + (len(MATRIX_TESTS) if row.contended else 0)
            old = best.get((src, dst))
            if old is None or (rank, -row.at.timestamp()) < (old[0], -old[1].timestamp()):
                best[(src, dst)] = (rank, row.at, row.value * scale)
    newest = max((at for _, at, _ in best.values()), default=None)
    return {pair: value for pair, (_, _, value) in best.items()}, newest


def view_from_inventory(
    inventory: Inventory,
    measured: Mapping[Pair, float],
    health: Mapping[int, tuple[bool, str]],
    pair_verdicts: Mapping[Pair, PairVerdict] | None = None,
) -> FabricView:
    """health: GPU index -> (healthy, reason); a GPU missing from it counts as not healthy."""
    gpus = [
        GpuState(
            index=g.index,
            healthy=health.get(g.index, (False, ""))[0],
            reason=health.get(g.index, (False, "no health verdict for this GPU"))[1],
            locality=locality(g.numa_node, g.cpu_affinity),
            uuid=g.uuid,
        )
        for g in inventory.gpus
    ]
    return FabricView(
        gpus=gpus,
        measured=dict(measured),
        expected=expected_matrix(inventory),
        kinds={(p.src, p.dst): link_kind(p) for p in inventory.pairs},
        pair_verdicts=dict(pair_verdicts or {}),
    )
