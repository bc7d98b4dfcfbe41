"""The pure fleet-peer judges: distributions, checks, pair and host flags, sibling gaps."""

from __future__ import annotations

import pytest

from peerwatch.app.analysis.fleet_peers import (
    Distribution,
    GroupKey,
    distribution,
    flag_pairs,
    peer_check,
    sibling_gaps,
    topology_class,
)
from peerwatch.app.analysis.health import PairJudgement
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import TestName

H200 = GroupKey("NVIDIA H200", "NVSwitch NV18", "570.86.15")
GB = 1e9


def test_distribution_median_low_percentile_and_counts() -> None:
    members = [(h, v * GB) for h, v in enumerate([380, 390, 392, 394, 396], start=1)]
    members.append((1, 400 * GB))  # host 1 has two pairs
    d = distribution(TestName.CE_WRITE, members, low_percentile=10.0)
    assert d.median == pytest.approx(393 * GB)
    assert d.low == pytest.approx(385 * GB)  # between the lowest two, numpy's linear way
    assert (d.hosts, d.pairs) == (5, 6)


def test_latency_low_end_is_the_slow_high_end() -> None:
    d = distribution(TestName.LATENCY, [(1, 1e-6), (2, 1e-6), (3, 2e-6)], 10.0)
    assert d.median == 1e-6 and d.low == pytest.approx(1.8e-6)


def test_check_uses_the_better_of_value_and_baseline() -> None:
    dist = Distribution(median=400 * GB, low=390 * GB, hosts=20, pairs=40)
    dip = peer_check(0, 1, TestName.CE_WRITE, 350 * GB, 398 * GB, H200, dist, 0.93, 5)
    assert not dip.flagged and dip.ratio == pytest.approx(0.995)  # one slow sample: not here
    slow = peer_check(0, 1, TestName.CE_WRITE, 364 * GB, 362 * GB, H200, dist, 0.93, 5)
    assert slow.flagged and slow.ratio == pytest.approx(0.91)
    assert slow.text == ("0.91 of the fleet median for NVIDIA H200 NVSwitch NV18 ce_write over "
                         "20 hosts on driver 570.86.15 (364 GB/s vs 400 GB/s)")
    small = peer_check(0, 1, TestName.CE_WRITE, 364 * GB, None, H200,
                       Distribution(400 * GB, 390 * GB, hosts=4, pairs=8), 0.93, 5)
    assert not small.flagged  # too few hosts to judge against


def test_latency_check_is_oriented_lower_is_worse() -> None:
    dist = Distribution(median=1.0e-6, low=1.2e-6, hosts=9, pairs=9)
    c = peer_check(0, 1, TestName.LATENCY, 1.25e-6, None, H200, dist, 0.93, 5)
    assert c.flagged and c.ratio == pytest.approx(0.8)


def _pair(src: int, dst: int, verdict: Verdict = Verdict.HEALTHY) -> PairJudgement:
    return PairJudgement(verdict, f"GPU{src}->GPU{dst}: fine", src, dst, ())


def test_flag_pairs_marks_slow_pairs_and_the_host_median() -> None:
    dist = Distribution(400 * GB, 390 * GB, 10, 20)
    checks = [peer_check(0, 1, TestName.CE_WRITE, 360 * GB, None, H200, dist, 0.93, 5),
              peer_check(0, 1, TestName.CE_READ, 364 * GB, None, H200, dist, 0.93, 5),
              peer_check(1, 0, TestName.CE_WRITE, 399 * GB, None, H200, dist, 0.93, 5)]
    pairs, host = flag_pairs([_pair(0, 1), _pair(1, 0, Verdict.DOWN)], checks, 0.93, 5)
    assert pairs[0].verdict is Verdict.DEGRADED
    assert pairs[0].reason.startswith("GPU0->GPU1 is 0.90 of the fleet median")  # its worst
    assert pairs[1] == _pair(1, 0, Verdict.DOWN)  # not flagged: untouched
    assert host.ratio == pytest.approx(0.91) and host.below and host.flagged == 2
    already = flag_pairs([_pair(0, 1, Verdict.DEGRADED)], checks, 0.93, 5)[0][0]
    assert already.reason.startswith("GPU0->GPU1: fine; also GPU0->GPU1 is 0.90")


def test_small_groups_judge_nobody() -> None:
    dist = Distribution(400 * GB, 390 * GB, 3, 6)
    checks = [peer_check(0, 1, TestName.CE_WRITE, 300 * GB, None, H200, dist, 0.93, 5)]
    pairs, host = flag_pairs([_pair(0, 1)], checks, 0.93, 5)
    assert pairs[0].verdict is Verdict.HEALTHY and host.ratio is None and not host.below


def test_sibling_gaps_compare_with_the_best_driver_of_enough_hosts() -> None:
    old, new, tiny = (GroupKey("NVIDIA H200", "NVSwitch NV18", d) for d in ("560", "570", "575"))
    stats = {(old, TestName.CE_WRITE): Distribution(400 * GB, 390 * GB, 40, 80),
             (new, TestName.CE_WRITE): Distribution(368 * GB, 360 * GB, 60, 120),
             (tiny, TestName.CE_WRITE): Distribution(300 * GB, 290 * GB, 2, 4)}
    (gap,) = sibling_gaps(stats, 0.93, 5)
    assert (gap.group, gap.reference, gap.flagged) == (new, old, True)
    assert gap.text == "driver 570 is 0.92 of driver 560 for NVIDIA H200 NVSwitch NV18 ce_write"
    assert sibling_gaps({k: v for k, v in stats.items() if k[0] != old}, 0.93, 5) == []


@pytest.mark.parametrize(("topology", "nvswitch", "label"), [
    ("NV18", True, "NVSwitch NV18"), ("NV4", False, "NV4"), ("SYS", False, "PCIe SYS")])
def test_topology_classes(topology: str, nvswitch: bool, label: str) -> None:
    assert topology_class(topology, nvswitch) == label
