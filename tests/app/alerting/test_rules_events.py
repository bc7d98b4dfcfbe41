"""Xid/SXid events judged into verdicts and alerts on the simulated fabric, with a fake
clock: thresholds before a link fault, one page per fault, the related alerts explained."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.context import load_context
from peerwatch.app.analysis.xid_judge import judge_events
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.transaction import judging
from peerwatch.app.queries.events import load_event_facts
from peerwatch.app.queries.health import host_health
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.agent.events import EventCollector, with_events
from peerwatch.probes.report import Report, ReportKind
from peerwatch.probes.sim.faults import BandwidthFactor, GpuLost, LinksDown, LinkXid, SwitchSxid
from peerwatch.probes.sweep import build_report
from tests.app.alerting.simhost import SimHost

SWEEP_S = 300.0


@dataclass
class EventHost(SimHost):
    """A SimHost whose reports carry the fabric's events, as the agent's do."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.collector = EventCollector(feeds=[self.fabric.drain_events])

    def send(self, kind: ReportKind = ReportKind.INVENTORY) -> Report:
        report = with_events(build_report(self.fabric, kind, self.options, now=self.now),
                             self.collector)
        with self.sessions() as session:
            ingest(session, report, self.settings, self.now())
        return report

    def link(self, gpu: int, link: int):  # type: ignore[no-untyped-def]
        with self.sessions() as s:
            health = host_health(s, self.settings, self.hostname)
        return next(j for j in health.judgement.links if (j.gpu, j.link) == (gpu, link))


@pytest.fixture
def ev(sessions: sessionmaker[Session], sqlite_settings: Settings) -> EventHost:
    return EventHost(sessions, sqlite_settings)


def test_one_xid_74_warns_three_in_the_window_fault_the_link(ev: EventHost) -> None:
    ev.step(30)
    ev.inject(LinkXid(gpu=0, link=2, every_s=120))
    ev.step(30)
    assert ev.active() == {"XidWarning": {(("gpu", "0"), ("host", "sim-a"), ("link", "2"),
                                           ("xid", "xid74"))}}
    assert ev.link(0, 2).verdict.value == "healthy"  # one event alone changes no verdict
    ev.step(120)
    ev.step(120)  # the third Xid 74 within 10 minutes
    assert set(ev.active()) == {"XidFault"}
    (page,) = ev.alerts("firing", "XidFault")
    assert page.labels["link"] == "2" and page.labels["severity"] == "critical"
    assert "3x in 10 min, threshold 3" in page.annotations["description"]
    link = ev.link(0, 2)
    assert link.verdict.value == "degraded" and "Xid 74" in link.reason
    assert {a.state for a in ev.alerts(rule="XidWarning")} == {"resolved"}


def test_an_xid_fault_explains_its_pairs_alerts(ev: EventHost) -> None:
    for _ in range(3):
        ev.step(SWEEP_S, "sweep")
    ev.inject(BandwidthFactor(src=0, dst=1, factor=0.5, both_directions=False),
              LinkXid(gpu=0, link=4, every_s=60))
    for _ in range(4):
        ev.step(SWEEP_S, "sweep")
    assert "P2PBandwidthDegraded" not in ev.firing()
    (page,) = ev.alerts("firing", "XidFault")
    assert ("It explains NVLinkErrorsIncreasing of NVLink 4 and the pair alerts of GPU0 "
            "(GPU0->GPU1)") in page.annotations["description"]


def test_a_lost_gpu_and_a_downed_link_page_once_naming_their_xid(ev: EventHost) -> None:
    ev.step(30)
    ev.inject(GpuLost(gpu=1), LinksDown(gpu=0, links=(17,)))
    for _ in range(3):
        ev.step(60)
    firing = ev.firing()
    assert {"GPUMissing", "NVLinkDown"} <= firing and not firing & {"XidFault", "XidWarning"}
    (lost,) = ev.alerts("firing", "GPUMissing")
    assert "The agent saw Xid 79 (GPU has fallen off the bus)" in lost.annotations["description"]
    (down,) = ev.alerts("firing", "NVLinkDown")
    assert "The agent saw Xid 74 (NVLink error, 1x)" in down.annotations["description"]


def test_a_non_fatal_sxid_is_a_warning_on_its_switch(ev: EventHost) -> None:
    ev.preset = "hgx8"
    ev.step(30)
    ev.inject(SwitchSxid(switch=0, sxid=12028))
    ev.step(30)
    assert ev.active() == {"XidWarning": {(("host", "sim-a"), ("nvlink_domain", "sim-a"),
                                           ("switch", "nvswitch0"), ("xid", "sxid12028"))}}


def test_the_rules_go_on_from_the_events_their_judgement_judged(ev: EventHost) -> None:
    """The rules evaluated in a judgement's transaction take its judged Xid/SXid events
    (HostHealth.events) rather than reading them again: the same findings."""
    ev.step(30)
    ev.inject(LinkXid(gpu=0, link=2, every_s=120))
    ev.step(30)
    now = ev.now()
    with judging(ev.sessions, ev.hostname, now, ev.settings) as judged:
        assert judged.row is not None and judged.health is not None
        ctx = load_context(judged.session, judged.row, now, ev.settings, ev.alerting,
                           judged.health)
        assert judged.health.events and ctx.events is judged.health.events
        assert ctx.events == judge_events(load_event_facts(judged.session, judged.row.id, now),
                                          now)
        later = load_context(judged.session, judged.row, now + timedelta(seconds=1),
                             ev.settings, ev.alerting, judged.health)
        assert later.events is not judged.health.events  # another `now`: judged again
