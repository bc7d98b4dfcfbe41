"""app/analysis/fabric_state.py on readings of the simulated fabric: each fabric fault is named
as its own contradiction with an action, and machines built short of NVLink are healthy."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from peerwatch.app.analysis.attribution import attribute
from peerwatch.app.analysis.fabric_expect import expect_gpu, unused_by_design
from peerwatch.app.analysis.fabric_health import GpuFacts, judge_gpu, judge_host, judge_link
from peerwatch.app.analysis.fabric_state import judge_gpu_fabric, judge_host_fabric
from peerwatch.app.analysis.health import PairJudgement, Sample, Thresholds, judge_pair, judge_test
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import FabricManagerInfo, TestName
from peerwatch.probes.sim.faults import (
    FabricManagerDown,
    FabricNotCompleted,
    FabricStatusError,
    FabricUnhealthy,
    Fault,
    LinksDown,
    PeerCopiesFail,
)
from peerwatch.probes.sim.simulated import SimulatedFabric

T0 = datetime(2026, 12, 1, 10, tzinfo=UTC)


def readings(preset: str, *faults: Fault):
    fab = SimulatedFabric(preset, faults=faults)
    gpus = {g: fab.gpu(g) for g in range(fab.gpu_count())}
    ports = {g: fab.nvlinks(g) for g in gpus}
    return fab, gpus, ports


def host_verdict(preset: str, *faults: Fault, pairs=()):
    fab, gpus, ports = readings(preset, *faults)
    return judge_host_fabric(fab.hostname, gpus, ports, pairs, fab.fabric_manager())


@pytest.mark.parametrize("preset", ["h200x2", "hgx8", "mesh4", "pcie4", "h100nvl2"])
def test_every_preset_is_healthy_as_built(preset: str) -> None:
    verdict = host_verdict(preset)
    assert verdict.verdict is Verdict.HEALTHY, verdict.reason


def test_expectations_follow_the_machine() -> None:
    _, gpus, ports = readings("hgx8")
    e = expect_gpu(gpus[0], ports[0])
    assert (e.nvlink, e.nvswitch, e.registration, e.fabric_manager) == (True, True, True, True)
    _, gpus, ports = readings("mesh4")
    e = expect_gpu(gpus[0], ports[0])
    assert (e.nvlink, e.nvswitch, e.fabric_manager) == (True, False, False)
    _, gpus, ports = readings("pcie4")
    assert not expect_gpu(gpus[0], ports[0]).nvlink
    _, gpus, ports = readings("h100nvl2")
    e = expect_gpu(gpus[0], ports[0])
    assert (e.design_links, e.ports, e.by_design_short) == (12, 18, True)
    assert "wires 12 of 18" in e.basis


@pytest.mark.parametrize(("state", "verdict"), [("in_progress", Verdict.DEGRADED),
                                                ("not_started", Verdict.DOWN)])
def test_fabric_not_completed(state: str, verdict: Verdict) -> None:
    result = host_verdict("hgx8", FabricNotCompleted(state=state, gpu=3))  # type: ignore[arg-type]
    assert result.verdict is verdict
    bad = [g for g in result.gpus if g.verdict is not Verdict.HEALTHY]
    assert [g.gpu for g in bad] == [3]
    assert f"fabric not COMPLETED ({state}): P2P cannot be trusted" in bad[0].reason
    assert "nvidia-fabricmanager" in bad[0].reason  # the action


def test_fabric_status_error() -> None:
    result = host_verdict("h200x2", FabricStatusError(status="unknown"))
    assert result.verdict is Verdict.DOWN
    assert all("fabric registration failed (status unknown)" in g.reason for g in result.gpus)


def test_fabric_unhealthy_names_the_issues() -> None:
    result = host_verdict("hgx8", FabricUnhealthy(gpu=1))
    assert result.verdict is Verdict.DEGRADED
    assert "fabric health unhealthy (route_unhealthy)" in result.gpus[1].reason


def test_fabric_manager_down_is_a_host_finding() -> None:
    result = host_verdict("hgx8", FabricManagerDown())
    assert result.verdict is Verdict.DEGRADED
    assert all(g.verdict is Verdict.HEALTHY for g in result.gpus)
    assert "Fabric Manager not running on an NVSwitch host" in result.reason
    assert "start nvidia-fabricmanager" in result.reason
    # Where there is no NVSwitch, nobody needs Fabric Manager.
    assert host_verdict("mesh4").verdict is Verdict.HEALTHY


def test_fabric_manager_not_installed_runs_elsewhere() -> None:
    """A VM on an NVSwitch board (the lent H200 pair): no nv-fabricmanager in the guest, the
    fabric COMPLETED by the hypervisor's Fabric Manager. Not a finding."""
    fab, gpus, ports = readings("h200x2")
    fm = FabricManagerInfo(running=False, how="no nv-fabricmanager process", installed=False)
    assert judge_host_fabric("vm", gpus, ports, (), fm).verdict is Verdict.HEALTHY


def _pairs_with_failed_copies(fab: SimulatedFabric, a: int, b: int) -> list[PairJudgement]:
    th = Thresholds()
    out = []
    for src, dst in ((a, b), (b, a)):
        tests = [judge_test(src, dst, test, [Sample(T0, None, error="CUDA error (sim)")],
                            None, None, th) for test in (TestName.CE_WRITE, TestName.CE_READ)]
        tests.append(judge_test(src, dst, TestName.STAGED, [Sample(T0, 3.7e10)], None, None, th))
        out.append(judge_pair(src, dst, tests, fab.pair(src, dst)))
    return out


@pytest.mark.parametrize("preset", ["h200x2", "mesh4"])
def test_links_up_and_fabric_completed_but_peer_copies_fail(preset: str) -> None:
    fab, gpus, ports = readings(preset, PeerCopiesFail(a=0, b=1))
    pairs = _pairs_with_failed_copies(fab, 0, 1)
    result = judge_host_fabric(fab.hostname, gpus, ports, pairs, fab.fabric_manager())
    # one failing pair is a pair fault, the pair's (PairCopiesFailing), no GPU's:
    # no fabric contradiction at either end; a GPU failing with every peer is down (below)
    assert result.verdict is Verdict.HEALTHY, result.reason
    assert not any(v.findings for v in result.gpus)


def test_a_gpu_failing_with_every_peer_is_down_and_only_it() -> None:
    fab, gpus, ports = readings("hgx8", *(PeerCopiesFail(a=3, b=b) for b in range(8) if b != 3))
    raw = [p for b in range(8) if b != 3 for p in _pairs_with_failed_copies(fab, 3, b)]
    attributed = attribute(raw, {})
    assert set(attributed.pattern) == {3} and attributed.pattern[3].failing
    assert all(p.explained_by == 3 for p in attributed.pairs)
    result = judge_host_fabric(fab.hostname, gpus, ports, attributed.pairs,
                               fab.fabric_manager())
    verdicts = {v.gpu: v.verdict for v in result.gpus}
    assert verdicts.pop(3) is Verdict.DOWN
    assert set(verdicts.values()) == {Verdict.HEALTHY}, result.reason
    assert "peer copies fail with every peer" in result.gpus[3].reason
    assert "drain the GPU" in result.gpus[3].reason


def test_peer_copy_failures_are_explained_by_an_incomplete_fabric_first() -> None:
    fab, gpus, ports = readings("h200x2", FabricNotCompleted(state="not_started"))
    verdict = judge_gpu_fabric(0, gpus[0], ports[0], _pairs_with_failed_copies(fab, 0, 1))
    assert "not COMPLETED" in verdict.reason and "peer copies fail" not in verdict.reason


def test_twelve_of_eighteen_links_is_healthy_by_design_one_more_down_is_not() -> None:
    fab, gpus, ports = readings("h100nvl2")
    unused = unused_by_design(gpus, ports)
    assert len(unused) == 12  # 6 per GPU
    th = Thresholds()
    links = [judge_link(p, {}, th, (p.gpu, p.link) in unused) for g in ports for p in ports[g]]
    assert all(j.verdict is Verdict.HEALTHY for j in links)
    gpu0 = judge_gpu(0, GpuFacts(info=gpus[0], ports=ports[0]),
                     [j for j in links if j.gpu == 0], [])
    assert gpu0.verdict is Verdict.HEALTHY and "as designed: 12 wired" in gpu0.reason

    fab, gpus, ports = readings("h100nvl2", LinksDown(gpu=0, count=1))
    assert unused_by_design(gpus, ports) == set()  # a bridge link has two ends: both GPUs 11
    gpu0 = judge_gpu(0, GpuFacts(info=gpus[0], ports=ports[0]), [], [])
    assert gpu0.verdict is Verdict.DEGRADED and "11/12 NVLinks up" in gpu0.reason


def test_judge_gpu_carries_the_fabric_contradiction_and_host_the_manager() -> None:
    fab, gpus, ports = readings("hgx8", FabricNotCompleted(state="in_progress", gpu=2),
                                FabricManagerDown())
    gpu2 = judge_gpu(2, GpuFacts(info=gpus[2], ports=ports[2]), [], [])
    assert gpu2.verdict is Verdict.DEGRADED
    assert "fabric not COMPLETED (in_progress): P2P cannot be trusted" in gpu2.reason
    fabric = judge_host_fabric(fab.hostname, gpus, ports, (), fab.fabric_manager())
    healthy = [judge_gpu(g, GpuFacts(info=gpus[g], ports=ports[g]), [], []) for g in (0, 1)]
    host = judge_host(fab.hostname, healthy, [], [], None, fabric)
    assert host.verdict is Verdict.DEGRADED and "Fabric Manager not running" in host.reason
