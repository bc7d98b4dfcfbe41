"""Turn what the server stores (inventory, latest results, health) into a `FabricView`.

Pure, so that the scheduler route, the tests and anyone holding a `Report` build placement's
input the same way: expected bandwidth per pair from `expected.py`, the kind of each pair's path
from its `PairInfo`, a socket locality per GPU, and the measured matrix from transfer results
(uncontended `ce_write` first, then half of an uncontended `ce_bidir`, contended values only
when nothing else exists).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from app.analysis.expected import expected
from app.analysis.placement_types import FabricView, GpuState, LinkKind, Pair, PairVerdict
from probes.report import Inventory, LinkState, PairInfo, TestName, TransferResult

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


def measured_matrix(results: Iterable[TransferResult]) -> dict[Pair, float]:
    """Per ordered pair, the best evidence of its copy rate among `results` (latest last)."""
    best: dict[Pair, tuple[int, float]] = {}
    for r in results:
        scale = MATRIX_TESTS.get(r.test)
        if scale is None or r.value is None or r.src is None or r.dst is None:
            continue
        rank = list(MATRIX_TESTS).index(r.test) + (len(MATRIX_TESTS) if r.contended else 0)
        key = (r.src, r.dst)
        if key not in best or rank <= best[key][0]:
            best[key] = (rank, r.value * scale)
    return {k: v for k, (_, v) in best.items()}


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
