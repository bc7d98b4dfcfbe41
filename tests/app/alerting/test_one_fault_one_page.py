"""One fault, one page, at switch and rack scale and for a GPU that falls off the bus
(issue 38): counted as on-call pages through the shipped Alertmanager routing
(`pages.py`). Before this, one lost NVSwitch on an HGX board raised 25 critical alerts in 3
pages (16 NVLinkDown, 8 NVSwitchFabricNotReady, XidFault), one lost switch tray of an NVL72
rack 234 critical alerts in 54 pages, and an Xid 79 on a GPU still listed two pages
(XidFault, then GPUMissing).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.queries.health import host_health
from peerwatch.app.queries.scheduler import schedulable
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import Report, ReportKind
from peerwatch.probes.sim.faults import Fault, GpuLost, NvSwitchLost, SwitchTrayLost
from peerwatch.probes.sweep import build_report
from tests.app.alerting.pages import pages
from tests.app.alerting.simhost import SimHost

Seen = dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, str]]


def _run(hosts: list[SimHost], fault: Fault, turns: int) -> Seen:
    """Every host healthy for three sweeps, then the fault: every alert ever pending or
    firing, by rule and labels."""
    for _ in range(3):
        for h in hosts:
            h.step(300, "sweep")
    for h in hosts:
        h.inject(fault)
    seen: Seen = {}
    for i in range(turns):
        for h in hosts:
            h.step(30, "sweep" if i % 10 == 9 else "inventory")
            for a in h.alerts("pending") + h.alerts("firing"):
                seen[(a.rule, tuple(sorted(a.labels.items())))] = dict(a.labels)
    return seen


def _critical(seen: Seen) -> list[str]:
    return sorted(rule for (rule, _), labels in seen.items() if labels["severity"] == "critical")


def test_a_lost_nvswitch_on_a_board_is_one_page_and_keeps_every_gpu_offered(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    host = SimHost(sessions, sqlite_settings, preset="hgx8", hostname="board-a")
    seen = _run([host], NvSwitchLost(switch=0, links=(2, 3)), 24)
    assert _critical(seen) == ["XidFault"], seen.keys()
    assert pages(seen.values()) == 1
    assert not {r for r, _ in seen} & {"NVLinkDown", "NVSwitchFabricNotReady",
                                       "NVLinkWidthReduced"}
    (page,) = host.alerts("firing", "XidFault")
    assert page.labels["switch"] == "nvswitch0"
    text = page.annotations["description"]
    assert "16 NVLinks down on 8 GPUs" in text and "GPU7 NVLinks 2, 3" in text, text
    with host.sessions() as s:
        health = host_health(s, host.settings, host.hostname)
        (offer,) = schedulable(s, 8)[0]
    assert {p.verdict for p in health.judgement.pairs} == {Verdict.HEALTHY}  # as measured
    assert {g.verdict for g in health.gpus} == {Verdict.DEGRADED}  # bandwidth reduced
    assert offer.healthy_gpus == list(range(8)) and offer.cuda_visible_devices == "0,1,2,3,4,5,6,7"
    assert [g.gpu for g in offer.reduced] == list(range(8)) and not offer.unhealthy
    assert "lost with NVSwitch nvswitch0" in offer.reduced[0].reason


def test_a_lost_switch_tray_of_an_nvl72_rack_is_one_page(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """The tray logs on each of the rack's 18 compute trays: one alert each, one page."""
    trays = [SimHost(sessions, sqlite_settings, preset="nvl72", hostname=f"rack-t{i:02d}")
             for i in range(18)]
    seen = _run(trays, SwitchTrayLost(tray=4), 6)
    assert set(_critical(seen)) == {"XidFault"} and len(_critical(seen)) == 18
    assert pages(seen.values()) == 1
    assert len({labels["nvlink_domain"] for labels in seen.values()}) == 1
    with trays[0].sessions() as s:
        offered = {h.host: h.healthy_gpus for h in schedulable(s, 4)[0]}
    assert offered == {t.hostname: [0, 1, 2, 3] for t in trays}  # 16 of 18 links: reduced


def _event_first(host: SimHost) -> Report:
    """The report built while GPU4 is still listed carries its Xid 79."""
    report = build_report(host.fabric, ReportKind.INVENTORY, host.options, now=host.now)
    host.inject(GpuLost(gpu=4))
    return report.model_copy(update={"events": host.fabric.drain_events(report.started_at)})


def _missing_first(host: SimHost) -> Report:
    """The report lists GPU4 gone; its Xid 79 comes with the next one."""
    host.inject(GpuLost(gpu=4))
    return build_report(host.fabric, ReportKind.INVENTORY, host.options, now=host.now)


@pytest.mark.parametrize("first", [_event_first, _missing_first], ids=lambda f: f.__name__)
def test_xid_79_and_the_gpu_gone_are_one_page_in_either_order(
        sessions: sessionmaker[Session], sqlite_settings: Settings,
        first: Callable[[SimHost], Report]) -> None:
    host = SimHost(sessions, sqlite_settings, preset="hgx8", hostname="x79")
    for _ in range(3):
        host.step(300, "sweep")
    host.advance(30)
    with host.sessions() as s:
        ingest(s, first(host), host.settings, host.now())
    host.evaluate()
    for _ in range(10):
        host.step(30)
    rows = [a for a in host.alerts() if a.labels["severity"] == "critical"]
    assert [(a.rule, a.labels["gpu"], a.state) for a in rows] == [("GPUMissing", "4", "firing")]
    assert host.history(rows[0].id)[-1] == "firing" and "resolved" not in host.history(rows[0].id)
