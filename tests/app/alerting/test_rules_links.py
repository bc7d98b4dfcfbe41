"""NVLink rules on the simulated fabric: links down, width, error counters (by rate only)."""

from __future__ import annotations

from peerwatch.probes.sim.faults import ErrorGrowth, LinksDown, LinkXid
from tests.app.alerting.simhost import SimHost

LINK = ("gpu", "0"), ("host", "sim-a"), ("link", "17")


def test_healthy_host_raises_nothing(host: SimHost) -> None:
    host.sweep()
    host.evaluate()
    for _ in range(3):
        host.step(30)
    assert host.alerts() == []


def test_link_down_goes_pending_then_firing_then_resolves(host: SimHost) -> None:
    host.send()
    host.evaluate()
    down = LinksDown(gpu=0, count=1)  # the last of its 18 links
    host.inject(down)
    host.step(30)
    assert host.active() == {
        "NVLinkDown": {LINK},
        "NVLinkWidthReduced": {(("gpu", "0"), ("host", "sim-a"))},
    }
    assert {a.rule: a.state for a in host.alerts()} == {
        "NVLinkDown": "pending", "NVLinkWidthReduced": "pending"}
    host.step(30)
    assert host.firing() == set()  # 30 s of the 60 s `for`
    host.step(30)
    assert host.firing() == {"NVLinkDown", "NVLinkWidthReduced"}
    [alert] = host.alerts(rule="NVLinkDown")
    assert alert.annotations["summary"] == "NVLink 17 of GPU0 on sim-a is down"
    assert "GPU0 has 17 of 18 NVLinks up" in alert.annotations["description"]
    assert alert.annotations["dashboard"] == "/#/host/sim-a?gpu=0"
    assert alert.labels["severity"] == "critical"

    host.clear(down)
    host.step(30)
    assert host.firing() == set()
    [alert] = host.alerts(rule="NVLinkDown")
    assert alert.state == "resolved"
    assert host.history(alert.id) == ["pending", "firing", "resolved"]


def test_a_single_flap_shorter_than_for_warns_on_the_link_and_pages_nothing(
        host: SimHost) -> None:
    """Down for 30 s, then up: NVLinkDown stays under its `for` and one drop is not
    flapping, so no link-state rule names the Xid 74 the drop logged. An operator of
    thousands of hosts wants no page for it, but not silence either: XidWarning on the
    link, saying it came back; while the link was down it was NVLinkDown's (pending)."""
    host.send()
    down = LinksDown(gpu=1, links=(4,))
    host.inject(down)
    host.step(30)
    assert set(host.active()) == {"NVLinkDown", "NVLinkWidthReduced"}  # pending, no Xid
    host.clear(down)
    host.step(30)
    assert host.firing() == {"XidWarning"}
    (warn,) = host.alerts("firing")
    assert warn.labels == {"alertname": "XidWarning", "severity": "warning", "host": "sim-a",
                           "gpu": "1", "link": "4", "xid": "xid74"}
    assert "NVLink 4 went down once as the event was logged and is up again" in \
        warn.annotations["description"]
    assert {a.state for a in host.alerts() if a.rule != "XidWarning"} == {"inactive"}


def test_rising_replays_fire_and_resolve_once_the_window_is_quiet(host: SimHost) -> None:
    host.send()
    growth = ErrorGrowth(gpu=1, link=3, counter="replay", per_second=0.05)
    host.inject(growth)
    host.step(30)
    host.step(30)
    [alert] = host.alerts("firing")
    assert alert.rule == "NVLinkErrorsIncreasing"
    assert alert.labels["link"] == "3" and alert.labels["gpu"] == "1"
    assert "replay errors growing" in alert.annotations["description"]
    host.clear(growth)
    host.step(300)
    assert host.firing() == {"NVLinkErrorsIncreasing"}  # the growth is still in the window
    for _ in range(3):  # 20 min: the 15 min rate window no longer sees growth
        host.step(300)
    assert host.alerts("resolved", rule="NVLinkErrorsIncreasing")
    assert host.firing() == set()


def test_large_constant_lifetime_crc_count_stays_silent(host: SimHost) -> None:
    burst = ErrorGrowth(gpu=0, link=2, counter="crc_data", per_second=20_000)
    host.inject(burst)
    host.advance(60)  # 1.2 million CRC errors, counted before peerwatch ever looked
    host.clear(burst)
    host.send()
    host.evaluate()
    for _ in range(6):
        host.step(30)
    counts = [c.crc_data for c in host.fabric.link_counters(0) if c.link == 2]
    assert counts[0] is not None and counts[0] >= 1_000_000
    assert host.alerts() == []


def test_crc_growth_fires_only_above_the_rate(host: SimHost) -> None:
    host.send()
    slow = ErrorGrowth(gpu=0, link=5, counter="crc_flit", per_second=0.5)
    host.inject(slow)
    for _ in range(4):
        host.step(30)
    assert host.alerts() == []  # 0.5/s is under the 1/s default
    fast = ErrorGrowth(gpu=0, link=6, counter="crc_flit", per_second=5)
    host.inject(fast)
    host.step(30)
    host.step(30)
    assert host.active() == {"NVLinkErrorsIncreasing": {
        (("gpu", "0"), ("host", "sim-a"), ("link", "6"))}}


def test_corrected_crc_and_ecc_growth_under_load_stays_silent(host: SimHost) -> None:
    """CRC_DATA/ECC_DATA grew 10-142/s per link on healthy H200s under load: never an alert."""
    host.send()
    for counter in ("crc_data", "ecc_data"):
        host.inject(ErrorGrowth(gpu=0, link=3, counter=counter, per_second=150))
    for _ in range(4):
        host.step(30)
    assert host.alerts() == []


def test_a_flapping_link_is_degraded_and_pages_once_it_is_up(host: SimHost) -> None:
    """Down for 30 s, up, down again, up: NVLinkDown never lasts its 60 s, but the link
    went down twice within the hour and is flapping."""
    from sqlalchemy import select

    from peerwatch.app.store.tables.judged import JudgedLink
    host.send()
    host.evaluate()
    down = LinksDown(gpu=1, links=(4,))
    for _ in range(2):
        host.inject(down)
        host.step(30)
        host.clear(down)
        host.step(30)
    assert host.firing() == {"NVLinkFlapping"}
    [alert] = host.alerts("firing")
    assert alert.labels["link"] == "4" and alert.labels["gpu"] == "1"
    assert "went down 2 times in the last 60 min" in alert.annotations["description"]
    # each drop logged its Xid 74 (probes/sim/simevents.py): named here, not a page of its
    # own; the first drop's warning (a single flap, up again) ended with the second drop
    assert "The agent saw Xid 74 (NVLink error, 2x)" in alert.annotations["description"]
    assert "XidFault" not in {a.rule for a in host.alerts()}
    assert {a.state for a in host.alerts(rule="XidWarning")} == {"resolved"}
    with host.sessions() as s:
        link = s.scalar(select(JudgedLink).where(JudgedLink.gpu == 1, JudgedLink.link == 4))
        assert link is not None and link.verdict == "degraded" and len(link.facts["downs"]) == 2
    host.step(3600)  # an hour later the downs have left the window
    assert host.firing() == set()


def test_a_link_logging_xid_74_while_up_pages_the_xid(host: SimHost) -> None:
    """The control: a marginal link logs Xid 74 while NVML shows it up (no drop to own the
    event): XidWarning at the first, XidFault at the third within 10 min."""
    host.send()
    host.evaluate()
    host.inject(LinkXid(gpu=0, link=3, every_s=120))
    host.step(30)
    assert host.active() == {"XidWarning": {(("gpu", "0"), ("host", "sim-a"), ("link", "3"),
                                             ("xid", "xid74"))}}
    for _ in range(8):  # 4 min: two more
        host.step(30)
    assert "XidFault" in host.active()
