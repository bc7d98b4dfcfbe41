"""Pair, PCIe and probe rules on the simulated fabric, with a fake clock."""

from __future__ import annotations

from peerwatch.probes.sim.faults import (
    BandwidthFactor,
    Contention,
    P2PDisabled,
    PcieDowntrained,
    TransferFails,
)
from tests.app.alerting.simhost import SimHost

SWEEP_S = 300.0


def test_slow_pair_fires_after_the_sustain_time_and_resolves(host: SimHost) -> None:
    for _ in range(3):
        host.step(SWEEP_S, "sweep")
    assert host.alerts() == []
    slow = BandwidthFactor(src=0, dst=1, factor=0.5, both_directions=False)
    host.inject(slow)
    host.step(SWEEP_S, "sweep")
    host.step(SWEEP_S, "sweep")
    assert host.firing() == set()  # low for 5 min of the 10 min the server waits
    host.step(SWEEP_S, "sweep")
    assert host.active() == {"P2PBandwidthDegraded": {  # one page for the pair
        (("gpu", "0"), ("host", "sim-a"), ("peer_gpu", "1"))}}
    alert = host.alerts("firing")[0]
    summary = alert.annotations["summary"]
    assert summary.startswith("GPU0<->GPU1 on sim-a is below its expected bandwidth: "
                              "GPU0->GPU1 ce_read 0.")
    assert ", ce_write 0." in summary and summary.endswith(" (one direction only)")
    assert alert.annotations["dashboard"].startswith("/#/host/sim-a?pair=0-1&test=ce_")
    assert "of expected" in alert.annotations["description"]
    assert alert.value is not None and alert.value < 0.7
    host.clear(slow)
    host.step(30)  # an inventory report leaves pair alerts alone: it has no new samples
    assert len(host.alerts("firing")) == 1
    for _ in range(2):  # hysteresis: three good sweeps in a row before it resolves
        host.step(SWEEP_S, "sweep")
        assert len(host.alerts("firing")) == 1
    host.step(SWEEP_S, "sweep")
    assert host.firing() == set()
    assert {a.state for a in host.alerts()} == {"resolved"}


def test_a_pair_slow_both_ways_pages_once_naming_both_directions(host: SimHost) -> None:
    """One fault between two GPUs, slow both ways: one page for the pair (gpu < peer_gpu),
    as PairCopiesFailing, whose text says each direction's low tests."""
    for _ in range(3):
        host.step(SWEEP_S, "sweep")
    host.inject(BandwidthFactor(src=1, dst=0, factor=0.5))
    for _ in range(3):
        host.step(SWEEP_S, "sweep")
    assert host.active() == {"P2PBandwidthDegraded": {
        (("gpu", "0"), ("host", "sim-a"), ("peer_gpu", "1"))}}
    [alert] = host.alerts("firing")
    summary = alert.annotations["summary"]
    assert "GPU0->GPU1 ce_read 0." in summary and "; GPU1->GPU0 ce_read 0." in summary
    assert "one direction" not in summary
    description = alert.annotations["description"]
    assert description.startswith("GPU0->GPU1 ce_") and ". GPU1->GPU0 ce_" in description
    assert alert.annotations["dashboard"].startswith("/#/host/sim-a?pair=0-1&test=")


def test_lost_links_page_once_not_once_per_pair(host: SimHost) -> None:
    """6 of GPU1's 18 links down: its pairs fall to 12/18 of their full width, and the one
    page is the GPU's (NVLinkDown per link, NVLinkWidthReduced); no pair alert repeats it,
    in either direction."""
    from peerwatch.probes.sim.faults import LinksDown
    for _ in range(3):
        host.step(SWEEP_S, "sweep")
    host.inject(LinksDown(gpu=1, count=6))
    for _ in range(4):
        host.step(SWEEP_S, "sweep")
    assert host.firing() == {"NVLinkDown", "NVLinkWidthReduced"}
    with host.sessions() as s:
        from peerwatch.app.queries.health import host_health
        slow = [t for t in host_health(s, host.settings, "sim-a").tests.values()
                if t.verdict.value == "degraded"]
    assert {(t.src, t.dst) for t in slow} == {(0, 1), (1, 0)}  # judged, shown, not paged


def test_a_pair_slow_in_every_other_sweep_is_degraded(host: SimHost) -> None:
    """No unbroken low run ever lasts the sustain time, but 3 of the last 6 sweeps are low:
    an intermittent fault pages, and it stays paged while it keeps coming back."""
    for _ in range(3):
        host.step(SWEEP_S, "sweep")
    slow = BandwidthFactor(src=0, dst=1, factor=0.5, both_directions=False)
    for i in range(8):
        (host.inject if i % 2 == 0 else host.clear)(slow)
        host.step(SWEEP_S, "sweep")
        if i == 3:
            assert host.firing() == set()  # 2 of the last 6 low so far
    assert host.firing() == {"P2PBandwidthDegraded"}
    alert = host.alerts("firing")[0]
    assert "(intermittent)" in alert.annotations["description"]
    assert "low in 3 of the last 6 measurements" in alert.annotations["description"]


def test_contended_samples_never_page(host: SimHost) -> None:
    for _ in range(3):
        host.step(SWEEP_S, "sweep")
    host.inject(Contention(gpu=0, peer=1))
    for _ in range(4):
        host.step(SWEEP_S, "sweep")
    report = host.sweep()
    contended = [r for r in report.results if r.contended and r.src == 0 and r.dst == 1]
    assert contended, "the simulated job should have shared the 0->1 links"
    assert min(r.value or 0 for r in contended) < 0.7 * max(
        r.value or 0 for r in report.results if r.test == contended[0].test)
    host.evaluate()
    assert host.alerts() == []


def test_p2p_disabled_fires_p2p_access_lost_for_both_directions(host: SimHost) -> None:
    host.send()
    host.inject(P2PDisabled(a=0, b=1))
    host.step(30)
    assert host.active() == {"P2PAccessLost": {
        (("gpu", "0"), ("host", "sim-a"), ("peer_gpu", "1")),
        (("gpu", "1"), ("host", "sim-a"), ("peer_gpu", "0"))}}
    assert host.firing() == {"P2PAccessLost"}


def test_pcie_downtrained_fires_after_15_minutes(host: SimHost) -> None:
    host.send()
    host.inject(PcieDowntrained(gpu=1, gen=4, width=8))
    host.step(30)
    assert host.active() == {"PCIeLinkDowntrained": {
        (("field", "width"), ("gpu", "1"), ("host", "sim-a")),
        (("field", "generation"), ("gpu", "1"), ("host", "sim-a"))}}
    host.step(600)
    assert host.firing() == set()
    host.step(300)
    assert host.firing() == {"PCIeLinkDowntrained"}
    width = next(a for a in host.alerts() if a.labels["field"] == "width")
    assert "x8 of x16" in width.annotations["description"]


def test_stale_probe_fires_after_the_stale_limit_and_resolves_on_report(host: SimHost) -> None:
    """ProbeStale is the host verdict's staleness: 90 s (three 30 s inventory intervals) by
    default, on the server's clock."""
    host.send()
    host.advance(80)
    host.evaluate()
    assert host.alerts() == []
    host.advance(20)  # 100 s > 3 x 30 s
    host.evaluate()
    [alert] = host.alerts("firing")
    assert alert.rule == "ProbeStale" and alert.value == 100
    assert alert.annotations["summary"] == "No report from sim-a for 100 s"
    assert "(limit 90 s, by the server's clock)" in alert.annotations["description"]
    host.step(0)
    assert host.alerts("resolved", rule="ProbeStale")


def test_failed_transfers_fire_probe_failing_until_a_clean_sweep(host: SimHost) -> None:
    host.sweep()
    fails = TransferFails(gpu=1)
    host.inject(fails)
    host.step(SWEEP_S, "sweep")
    [alert] = host.alerts("firing", rule="ProbeFailing")
    assert alert.value == 9  # 3 pair tests x 2 directions + 3 per-GPU tests touch GPU1
    # links up, fabric COMPLETED, yet peer copies fail: on a 2-GPU board a pair fault, one
    # page for the pair, none per GPU
    assert {(a.labels["gpu"], a.labels["peer_gpu"])
            for a in host.alerts("firing", rule="PairCopiesFailing")} == {("0", "1")}
    [pair_fault] = host.alerts("firing", rule="PairCopiesFailing")
    # the board's only pair: no other peer to show either GPU works, and the page says so
    assert "no other peer measured" in pair_fault.annotations["summary"]
    assert "each work with every other peer" not in pair_fault.annotations["description"]
    assert "illegal memory access" in alert.annotations["description"]
    host.clear(fails)
    host.step(30)  # an inventory report does not clear it: the latest sweep still failed
    assert host.firing() == {"ProbeFailing", "PairCopiesFailing"}
    host.step(SWEEP_S, "sweep")
    assert host.firing() == set()
