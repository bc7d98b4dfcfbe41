"""Placement on the simulated presets: the choices a scheduler must be able to trust.

Matrices come from the simulated fabric itself: its inventory gives the expected bandwidth
(`expected_matrix`), its transfer tests the measured one (seeded noise), so a preset's wiring
and faults reach placement exactly as they would through a probe.
"""

from __future__ import annotations

import pytest

from peerwatch.app.analysis.placement import (
    FabricView,
    LinkKind,
    NotEnoughHealthyGpus,
    PairVerdict,
    PlacementError,
    place,
)
from peerwatch.app.analysis.placement_inputs import expected_matrix, view_from_inventory
from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.inventory import collect_inventory
from peerwatch.probes.report import Inventory, LinkState, TestName
from peerwatch.probes.sim.faults import LinksDown
from peerwatch.probes.sim.simulated import SimulatedFabric

NVLINK_RING = 0.69 / 0.83  # all-reduce bus bandwidth over CE rate on NVLink


def _health(inv: Inventory) -> dict[int, tuple[bool, str]]:
    """A GPU with NVLink ports that are all down is unhealthy (what the health verdict says)."""
    out = {}
    for g in inv.gpus:
        ports = [p for p in inv.nvlinks if p.gpu == g.index]
        down = [p for p in ports if p.state is LinkState.DOWN]
        if ports and len(down) == len(ports):
            out[g.index] = (False, f"GPU{g.index}: {len(down)}/{len(ports)} NVLinks down")
        else:
            out[g.index] = (True, "")
    return out


def _measured(fab: SimulatedFabric, inv: Inventory) -> dict[tuple[int, int], float]:
    return {
        (p.src, p.dst): fab.measure(TestSpec(TestName.CE_WRITE, src=p.src, dst=p.dst)).value
        for p in inv.pairs
    }


def preset_view(
    preset: str, *faults: object, seed: int = 3, measured: bool = True,
    trust_health: bool = True,
) -> FabricView:
    fab = SimulatedFabric(preset, seed=seed, faults=faults)  # type: ignore[arg-type]
    inv = collect_inventory(fab, [])
    matrix = _measured(fab, inv) if measured else expected_matrix(inv)
    health = _health(inv) if trust_health else {g.index: (True, "") for g in inv.gpus}
    return view_from_inventory(inv, matrix, health)


def _full_nvlink_ring(view: FabricView) -> float:
    return max(view.expected.values()) * NVLINK_RING


# --------------------------------------------------------------------------- hgx8


@pytest.mark.parametrize("measured", [False, True])
def test_hgx8_healthy_any_k_gets_full_nvlink_bandwidth(measured: bool) -> None:
    view = preset_view("hgx8", measured=measured)
    for k in range(2, 9):
        got = place(view, k, "ring")
        assert got.predicted_bps is not None
        assert got.predicted_bps >= 0.95 * _full_nvlink_ring(view), k
        assert got.exact


def test_hgx8_choice_is_deterministic_despite_noise() -> None:
    choices = {place(preset_view("hgx8", seed=s), 4, "ring").gpus for s in range(4)}
    choices.add(place(preset_view("hgx8", measured=False), 4, "ring").gpus)
    # everything ties within noise: one socket (GPUs 0-3), then lowest indexes
    assert choices == {(0, 1, 2, 3)}
    a2a = {place(preset_view("hgx8", seed=s), 4, "all_to_all").gpus for s in range(3)}
    assert a2a == {(0, 1, 2, 3)}


def test_hgx8_healthy_gives_a_ready_cuda_visible_devices() -> None:
    got = place(preset_view("hgx8"), 3, "ring")
    assert got.cuda_visible_devices == "0,1,2"
    assert got.cuda_visible_devices_uuid is not None
    assert got.cuda_visible_devices_uuid.count("GPU-") == 3
    assert [e.gpu for e in got.excluded] == [3, 4, 5, 6, 7]
    assert "tie-break" in next(e.reason for e in got.excluded if e.gpu == 4)
    assert len(got.runner_ups) == 3 and got.runner_ups[0].predicted_bps


@pytest.mark.parametrize("pattern", ["ring", "all_to_all"])
def test_hgx8_gpu_with_links_cut_is_never_chosen(pattern: str) -> None:
    view = preset_view("hgx8", LinksDown(gpu=5, count=18))
    for k in range(1, 8):
        got = place(view, k, pattern)
        assert 5 not in got.gpus, (k, got.gpus)
        assert all(5 not in r.gpus for r in got.runner_ups)
        reason = next(e for e in got.excluded if e.gpu == 5)
        assert not reason.healthy and "GPU5" in reason.reason and "down" in reason.reason
    with pytest.raises(NotEnoughHealthyGpus, match="7 of 8 are healthy"):
        place(view, 8, pattern)


@pytest.mark.parametrize("pattern", ["ring", "all_to_all"])
def test_hgx8_collapsed_bandwidth_alone_keeps_the_gpu_out(pattern: str) -> None:
    # even before any health verdict calls GPU5 unhealthy, its measured links keep it out
    view = preset_view("hgx8", LinksDown(gpu=5, count=18), trust_health=False)
    for k in range(2, 8):
        got = place(view, k, pattern)
        assert 5 not in got.gpus, (k, got.gpus)
        reason = next(e for e in got.excluded if e.gpu == 5)
        assert reason.healthy and "slower" in reason.reason and "GPU5" in reason.reason


# --------------------------------------------------------------------------- mesh4


@pytest.mark.parametrize("measured", [False, True])
def test_mesh4_ring_of_four_runs_on_the_nvlink_ring(measured: bool) -> None:
    view = preset_view("mesh4", measured=measured)
    got = place(view, 4, "ring")
    assert got.gpus == (0, 1, 3, 2)
    assert got.predicted_bps is not None
    assert got.predicted_bps >= 0.95 * _full_nvlink_ring(view)


def test_mesh4_pair_is_an_nvlink_pair() -> None:
    view = preset_view("mesh4")
    got = place(view, 2, "ring")
    assert set(got.gpus) in ({0, 1}, {0, 2}, {1, 3}, {2, 3})
    assert got.gpus == (0, 1)  # equal NVLink pairs: same socket, lowest indexes
    for runner in got.runner_ups:
        assert set(runner.gpus) not in ({0, 3}, {1, 2})  # the NVLink pairs come first
    assert view.kinds[(0, 1)] is LinkKind.NVLINK


def test_mesh4_all_to_all_is_bound_by_a_pcie_diagonal() -> None:
    view = preset_view("mesh4")
    got = place(view, 4, "all_to_all")
    assert got.weakest_pair is not None and set(got.weakest_pair) in ({0, 3}, {1, 2})
    slowest = min(view.measured.values())
    assert got.predicted_bps == pytest.approx(3 * slowest, rel=0.1)


# --------------------------------------------------------------------------- pcie4


@pytest.mark.parametrize("measured", [False, True])
def test_pcie4_prefers_a_same_socket_pair(measured: bool) -> None:
    view = preset_view("pcie4", measured=measured)
    got = place(view, 2, "ring")
    assert got.gpus == (0, 1)
    assert place(view, 2, "all_to_all").gpus == (0, 1)


# --------------------------------------------------------------------------- inputs and errors


def test_asking_for_too_many_gpus_names_how_many_are_healthy() -> None:
    view = preset_view("mesh4", measured=False)
    with pytest.raises(NotEnoughHealthyGpus) as err:
        place(view, 5, "ring")
    assert (err.value.requested, len(err.value.healthy), err.value.total) == (5, 4, 4)
    assert "only 4 of 4 are healthy" in str(err.value)


def test_bad_k_or_pattern_is_a_clear_error() -> None:
    view = preset_view("mesh4", measured=False)
    with pytest.raises(PlacementError, match="at least 1"):
        place(view, 0, "ring")
    with pytest.raises(PlacementError, match="unknown pattern 'tree'"):
        place(view, 2, "tree")


def test_one_gpu_needs_no_bandwidth() -> None:
    got = place(preset_view("hgx8", LinksDown(gpu=0, count=18)), 1, "ring")
    assert got.gpus == (1,) and got.predicted_bps is None
    assert got.cuda_visible_devices == "1"


def test_missing_measurements_fall_back_to_topology_with_a_flag() -> None:
    full = preset_view("mesh4")
    measured = {p: v for p, v in full.measured.items() if p not in ((1, 3), (3, 1))}
    view = FabricView(full.gpus, measured, full.expected, full.kinds)
    got = place(view, 4, "ring")
    assert got.gpus == (0, 1, 3, 2)
    assert set(got.estimated_pairs) == {(1, 3), (3, 1)}
    assert any("predicted from topology" in w for w in got.warnings)


def test_pairs_with_no_data_at_all_are_unusable() -> None:
    full = preset_view("mesh4")
    keep = {p: v for p, v in full.measured.items() if set(p) != {1, 3}}
    view = FabricView(full.gpus, keep, {}, full.kinds)
    assert set(place(view, 2, "ring").gpus) != {1, 3}
    ring = place(view, 4, "ring")  # 1-3 gone: every ring of four needs a PCIe diagonal
    assert ring.predicted_bps is not None
    assert ring.predicted_bps < 0.5 * _full_nvlink_ring(full)


def test_a_pair_judged_down_is_routed_around() -> None:
    full = preset_view("hgx8")
    down = {(0, 1): PairVerdict("down", "GPU0->GPU1 copy failed"),
            (1, 0): PairVerdict("down", "GPU1->GPU0 copy failed")}
    view = FabricView(full.gpus, full.measured, full.expected, full.kinds, down)
    ring = place(view, 4, "ring")
    assert set(ring.gpus) == {0, 1, 2, 3}  # still the same socket's GPUs ...
    edges = {frozenset((ring.gpus[i], ring.gpus[(i + 1) % 4])) for i in range(4)}
    assert frozenset((0, 1)) not in edges  # ... in an order that avoids the broken pair
    a2a = place(view, 4, "all_to_all")
    assert not {0, 1} <= set(a2a.gpus)  # all-to-all cannot avoid a pair inside the set
