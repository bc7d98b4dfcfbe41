"""Placement's all_to_all answered from the measured all-to-all: simulated fabric -> probe
report with a2a_ce and a2a_nccl -> POST -> placement, on SQLite and PostgreSQL. A set of
every GPU the probe ran over gets the measured figure and says so; a smaller set is
predicted from pairs and warns; a host never measured answers as before."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from peerwatch.app.analysis.placement import FabricView, GpuState, Pattern, place
from peerwatch.probes.report import TestName
from peerwatch.probes.sim.faults import BandwidthFactor, TransferFails
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.app.test_scheduler_api import placement, post

WITH_A2A = SweepOptions(tests=(TestName.CE_WRITE, TestName.A2A_CE, TestName.A2A_NCCL))


def _post(client: TestClient, preset: str, host: str, *faults: Any) -> None:
    fab = SimulatedFabric(preset, seed=5, faults=faults, hostname=host)
    post(client, build_report(fab, options=WITH_A2A))


def test_every_gpu_gets_the_measured_figure_and_says_so(client: TestClient) -> None:
    _post(client, "hgx8", "hgx-a2a")
    body = placement(client, "hgx-a2a", 8, "all_to_all").json()
    assert body["source"] == "measured"
    assert body["model"].startswith("measured: a2a_nccl over GPUs 0,1,2,3,4,5,6,7")
    assert "predicted from pair figures" in body["model"]
    assert 300e9 < body["predicted_bps"] < 360e9  # NCCL all-to-all, NVSwitch: 0.70 of 478


def test_a_smaller_set_is_predicted_and_warns(client: TestClient) -> None:
    _post(client, "hgx8", "hgx-a2a4")
    body = placement(client, "hgx-a2a4", 4, "all_to_all").json()
    assert body["source"] == "predicted"
    assert any("measured a2a_nccl ran over GPUs 0,1,2,3,4,5,6,7" in w for w in body["warnings"])
    ring = placement(client, "hgx-a2a4", 8, "ring").json()
    assert ring["source"] == "predicted"  # the ring never reads the all-to-all


def test_the_measured_figure_shows_what_pairs_do_not(client: TestClient) -> None:
    """A healthy sweep, then GPU0->GPU1 slow in a sweep of the all-to-all alone: the pair
    figures still predict full speed; the measured answer is the slow GPU's pace."""
    _post(client, "hgx8", "hgx-slow")
    fab = SimulatedFabric("hgx8", seed=5, faults=[BandwidthFactor(0, 1, 0.4)],
                          hostname="hgx-slow")
    post(client, build_report(fab, options=SweepOptions(tests=(TestName.A2A_NCCL,))))
    body = placement(client, "hgx-slow", 8, "all_to_all").json()
    assert body["source"] == "measured"
    assert "(GPU0," in body["model"] or "(GPU1," in body["model"]
    assert body["predicted_bps"] < 0.6 * 334e9
    assert "predicted from pair figures: 3" in body["model"]  # the pairs: 300+ GB/s


def test_a_failed_all_to_all_measures_zero_and_fails_no_gpu_alone(client: TestClient) -> None:
    """GPU2 fails the NCCL all-to-all on every GPU: no GPU is judged down for it (it is no
    GPU's own failure), and the all-to-all of all four measures 0."""
    _post(client, "mesh4", "mesh-dead", TransferFails(gpu=2, test=TestName.A2A_NCCL))
    body = placement(client, "mesh-dead", 4, "all_to_all").json()
    assert body["source"] == "measured" and body["predicted_bps"] == 0.0


@pytest.mark.parametrize("measured", [{}, {0: 1e11, 1: 2e11}])
def test_pure_placement_uses_a_measured_set_only_when_it_is_the_chosen_one(
        measured: dict[int, float]) -> None:
    gpus = [GpuState(i, True) for i in range(2)]
    view = FabricView(gpus=gpus, measured={(0, 1): 3e11, (1, 0): 3e11},
                      all_to_all=measured, all_to_all_test="a2a_ce" if measured else None)
    got = place(view, 2, Pattern.ALL_TO_ALL)
    if measured:
        assert (got.source, got.predicted_bps) == ("measured", 1e11)
    else:
        assert (got.source, got.predicted_bps) == ("predicted", 3e11)
