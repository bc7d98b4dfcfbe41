"""Link, GPU and host verdicts, and counter rates across resets."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from peerwatch.app.analysis.fabric_health import GpuFacts, judge_gpu, judge_host, judge_link
from peerwatch.app.analysis.health import PairJudgement, Thresholds
from peerwatch.app.analysis.rates import increases, rate_per_s
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import LinkState, NvLinkPort, PcieLink, RemoteType
from tests.app.factory import gpu

T = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
TH = Thresholds()


def _port(g: int, k: int, up: bool = True) -> NvLinkPort:
    return NvLinkPort(gpu=g, link=k, state=LinkState.UP if up else LinkState.DOWN,
                      version="4.0", speed_bps=26.562e9, remote_type=RemoteType.NVSWITCH)


def test_rates_treat_a_counter_going_backwards_as_a_reset() -> None:
    points = [(T, 100), (T + timedelta(seconds=10), 150), (T + timedelta(seconds=20), 20),
              (T + timedelta(seconds=30), None), (T + timedelta(seconds=40), 50)]
    assert [d for _, _, d in increases(points)] == [50, 20, 30]
    assert rate_per_s(points) == 100 / 40
    assert rate_per_s(points[:1]) is None


def test_link_verdicts_judge_state_and_growth_not_size() -> None:
    assert judge_link(_port(0, 3, up=False), {}, TH).reason == \
        "GPU0 link 3 is down (NVML link state)"
    calm = judge_link(_port(0, 3), {"crc_data": 0.2, "replay": 0.0}, TH)
    assert calm.verdict is Verdict.HEALTHY
    replaying = judge_link(_port(0, 3), {"replay": 0.05}, TH)
    assert replaying.verdict is Verdict.DEGRADED
    assert "replay errors growing 0.05/s" in replaying.reason
    assert judge_link(_port(0, 3), {"crc_flit": 5.0}, TH).verdict is Verdict.DEGRADED
    # corrected-error counters grow on healthy NVLink 4 under load (142/s seen on H200s)
    loaded = judge_link(_port(0, 3), {"crc_data": 142.0, "ecc_data": 142.0}, TH)
    assert loaded.verdict is Verdict.HEALTHY


def test_gpu_with_every_link_down_is_down_and_with_some_degraded() -> None:
    dead = GpuFacts(info=gpu(3), ports=[_port(3, k, up=False) for k in range(18)])
    j = judge_gpu(3, dead, [], [])
    assert j.verdict is Verdict.DOWN
    assert "all 18 NVLinks down" in j.reason
    short = GpuFacts(info=gpu(3), ports=[_port(3, k, up=k >= 3) for k in range(18)])
    j = judge_gpu(3, short, [], [])
    assert j.verdict is Verdict.DEGRADED
    assert j.reason == "GPU3: 15/18 NVLinks up"
    assert judge_gpu(3, GpuFacts(info=None), [], []).verdict is Verdict.DOWN


def _ports(g: int) -> list[NvLinkPort]:
    """All 18 ports up: the factory's GPUs report 18 (`nvlink_count`), and a port left out of
    the list counts against the design (17 listed of 18 is 17/18)."""
    return [_port(g, k) for k in range(18)]


def test_a_gpu_listing_fewer_ports_than_it_has_reads_them_short() -> None:
    listed = GpuFacts(info=gpu(3), ports=[_port(3, k) for k in range(17)])
    j = judge_gpu(3, listed, [], [])
    assert j.verdict is Verdict.DEGRADED and "17/18 NVLinks up" in j.reason, j.reason
    had = GpuFacts(info=gpu(3).model_copy(update={"nvlink_count": 17}),
                   ports=[_port(3, k) for k in range(17)], had=18)  # 18 listed before
    assert "17/18 NVLinks up" in judge_gpu(3, had, [], []).reason
    full = judge_gpu(3, GpuFacts(info=gpu(3), ports=_ports(3)), [], [])
    assert full.verdict is Verdict.HEALTHY and "18/18 NVLinks up" in full.reason


def test_gpu_narrow_pcie_is_said_and_a_pair_fault_keeps_it_healthy_apart() -> None:
    narrow = gpu(1).model_copy(update={"pcie": PcieLink(gen_current=5, gen_max=5,
                                                        width_current=8, width_max=16)})
    j = judge_gpu(1, GpuFacts(info=narrow, ports=_ports(1)), [], [])
    assert "PCIe trained x8 of x16" in j.reason
    bad = PairJudgement(Verdict.DEGRADED, "GPU1->GPU2 ce_write low", 1, 2, ())
    good = PairJudgement(Verdict.HEALTHY, "fine", 1, 3, ())
    facts = GpuFacts(info=gpu(1), ports=_ports(1))
    # a pair at fault as a pair (its ends work with their other peers) is the
    # pair's fault, not either GPU's: both stay healthy, kept apart (the scheduler never
    # puts both in one job); one explained by another GPU is that GPU's fault alone
    for pairs in ([bad, good], [bad, good, good]):
        j = judge_gpu(1, facts, [], pairs)
        assert j.verdict is Verdict.HEALTHY, j
        assert "kept apart from GPU2 (a pair fault: its other peers work)" in j.reason
    theirs = replace(bad, explained_by=2, cause="GPU2 fabric in progress")
    j = judge_gpu(1, facts, [], [theirs, good, good])
    assert j.verdict is Verdict.HEALTHY
    assert "1 explained by GPU2 fabric in progress (not this GPU's fault)" in j.reason


def test_host_verdicts() -> None:
    healthy_gpu = judge_gpu(0, GpuFacts(info=gpu(0), ports=_ports(0)), [], [])
    ok = PairJudgement(Verdict.HEALTHY, "fine", 0, 1, ())
    assert judge_host("h", [healthy_gpu], [], [ok], None).verdict is Verdict.HEALTHY
    stale = judge_host("h", [healthy_gpu], [], [ok], "45 min")
    assert (stale.verdict, stale.reason) == (Verdict.UNKNOWN, "h: no report for 45 min")
    bad = PairJudgement(Verdict.DEGRADED, "GPU0->GPU1 ce_write low", 0, 1, ())
    j = judge_host("h", [healthy_gpu], [], [bad], None)
    assert j.verdict is Verdict.DEGRADED
    assert j.reason == "h: 0 of 1 GPUs, 1 of 1 pairs, 0 of 0 links not healthy; " \
                       "GPU0->GPU1 ce_write low"
