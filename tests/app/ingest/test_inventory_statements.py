"""An unchanged inventory from a healthy host costs a handful of statements, ingest and
judgement together: the host row (locked), the report row, the host row's new times, then
(behind the judging lock) one SELECT that finds nothing judged changed and one UPDATE of
`judged_at`, plus the counter samples. No GPU, port, pair, runtime or judged row is read or
written, and no ORM object is built for the host.

And the fast path hides nothing: each kind of change an inventory report can bring (a link
down, an error counter rising, a GPU gone, Fabric Manager stopped, the probe's clock off, an
Xid/SXid event) and the passing of time (a host that fell silent, an event's window ending)
still reaches the rules. Both backends.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.queries.health import host_health
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.inventory import Gpu, HostRuntime, NvLink
from peerwatch.app.store.tables.judged import JudgedHost
from peerwatch.probes.report import EventKind, EventSource, FabricEvent, ReportKind
from peerwatch.probes.sim.faults import ErrorGrowth, FabricManagerDown, GpuLost, LinksDown
from peerwatch.probes.sweep import build_report
from tests.app.alerting.simhost import SimHost
from tests.app.statement_log import statements

# ingest: SELECT host FOR UPDATE, INSERT report, UPDATE hosts; judgement: the advisory lock
# (PostgreSQL), SELECT host + judged host + active alerts, UPDATE judged_hosts
MAX_STATEMENTS = 6
SAMPLE_TABLES = ("link_samples", "gpu_samples")  # COPY on PostgreSQL, an INSERT on SQLite
UNTOUCHED = ("gpus", "nvlinks", "pairs", "host_runtime", "judged_gpus", "judged_links",
             "judged_pairs", "judged_tests", "measurements")
WRITE = re.compile(r"^\s*(?:INSERT INTO|UPDATE|DELETE FROM)\s+(\w+)", re.I)


@pytest.fixture
def host(settings: Settings) -> Iterator[SimHost]:
    """A healthy host past its first judgements, whose inventory the memo trusts."""
    engine = make_engine(settings)
    host = SimHost(make_sessionmaker(engine), settings)
    for _ in range(3):
        host.step(300, ReportKind.SWEEP)
    for _ in range(2):
        host.step(30)
    assert host.alerts() == []
    yield host
    engine.dispose()


@pytest.fixture
def engine(host: SimHost) -> Engine:
    bind: Engine = host.sessions.kw["bind"]
    return bind


def _one_inventory(host: SimHost, engine: Engine) -> list[str]:
    """The statements of one inventory report 30 s on, ingest and judgement (samples left
    out: one COPY per table on PostgreSQL)."""
    with statements(engine) as seen:
        host.step(30)
    return [" ".join(s.split()) for s in seen if not any(t in s for t in SAMPLE_TABLES)]


def _judged_at(host: SimHost) -> Any:
    with host.sessions() as session:
        return session.scalar(select(JudgedHost.judged_at))


def test_an_unchanged_inventory_runs_a_handful_of_statements(
        host: SimHost, engine: Engine) -> None:
    statements = _one_inventory(host, engine)
    assert len(statements) <= MAX_STATEMENTS, "\n".join(statements)
    written = sorted({m.group(1).lower() for s in statements if (m := WRITE.match(s))})
    assert written == ["hosts", "judged_hosts", "reports"], "\n".join(statements)
    for table in UNTOUCHED:
        assert not [s for s in statements if re.search(rf"\b{table}\b", s)], table
    assert _judged_at(host).replace(tzinfo=None) == host.now().replace(tzinfo=None)
    assert host.alerts() == []


def _active(host: SimHost, rule: str) -> list[str]:
    return [a.state for a in host.alerts(rule=rule) if a.state in ("pending", "firing")]


def _reaches(host: SimHost, engine: Engine, rule: str, change: Callable[[], None],
             reports: int = 1) -> list[str]:
    """The steady host takes the fast path; after `change`, within `reports` inventory
    reports `rule` is active: the host was judged in full. The states it went through."""
    assert len(_one_inventory(host, engine)) <= MAX_STATEMENTS  # the fast path, before
    change()
    for _ in range(reports):
        statements = _one_inventory(host, engine)
        if _active(host, rule):
            assert len(statements) > MAX_STATEMENTS
            return _active(host, rule)
    raise AssertionError(f"{rule} not raised within {reports} inventory reports")


def test_a_link_down_is_judged_and_its_alert_fires_on_later_inventories(
        host: SimHost, engine: Engine) -> None:
    assert _reaches(host, engine, "NVLinkDown",
                    lambda: host.inject(LinksDown(gpu=0, links=(0,)))) == ["pending"]
    for _ in range(2):  # the same (down) inventory again: its 60 s `for` passes
        host.step(30)
    assert _active(host, "NVLinkDown") == ["firing"]
    with host.sessions() as session:
        assert session.scalar(select(NvLink.state).where(NvLink.gpu == 0, NvLink.link == 0)
                              ) == "down"


def test_a_rising_error_counter_is_judged(host: SimHost, engine: Engine) -> None:
    fault = ErrorGrowth(gpu=0, link=0, counter="replay", per_second=0.05)
    assert _reaches(host, engine, "NVLinkErrorsIncreasing",
                    lambda: host.inject(fault), reports=4)


def test_a_gpu_gone_is_judged_and_named_last_seen_in_the_report_before(
        host: SimHost, engine: Engine) -> None:
    """GPUs' `last_seen_at` is not written on each report; a GPU gone gets the time of the
    last report that listed it (the one before), which GPUMissing's text names."""
    with host.sessions() as session:
        last = session.scalar(select(Gpu.last_seen_at).where(Gpu.index == 1))
    assert _reaches(host, engine, "GPUMissing", lambda: host.inject(GpuLost(gpu=1)))
    seen_before = host.now() - timedelta(seconds=30)
    with host.sessions() as session:
        gone = session.scalars(select(Gpu).where(Gpu.index == 1)).one()
    assert not gone.present and last is not None
    stored = gone.last_seen_at.replace(tzinfo=None)
    # the report before finished at its `now`, a few seconds after it started
    assert seen_before.replace(tzinfo=None) <= stored < host.now().replace(tzinfo=None)
    [alert] = host.alerts(rule="GPUMissing")
    assert f"last seen at {stored:%Y-%m-%d %H:%M:%S} UTC" in alert.annotations["description"]


def test_fabric_manager_stopping_is_judged(host: SimHost, engine: Engine) -> None:
    assert _reaches(host, engine, "FabricManagerDown",
                    lambda: host.inject(FabricManagerDown())) == ["pending"]
    with host.sessions() as session:
        assert session.scalar(select(HostRuntime.fabric_manager)) is not None


def test_a_probe_clock_off_is_judged(host: SimHost, engine: Engine) -> None:
    """The skew is read at arrival: a report sent by a clock 120 s behind raises
    ProbeClockSkew at once, though its inventory is unchanged."""
    assert len(_one_inventory(host, engine)) <= MAX_STATEMENTS
    host.advance(30)
    def behind():  # noqa: ANN202 - the probe's clock
        return host.now() - timedelta(seconds=120)
    report = build_report(host.fabric, ReportKind.INVENTORY, host.options, now=behind)
    with host.sessions() as session:
        ingest(session, report, host.settings, host.now(), sent_at=behind())
    host.evaluate()
    assert _active(host, "ProbeClockSkew") == ["pending"]


def test_a_host_that_fell_silent_is_judged_stale(host: SimHost, engine: Engine) -> None:
    """Time alone changes a verdict: past the staleness limit the periodic round's
    judgement finds the host stale (the fast path needs it heard from within the limit)."""
    assert len(_one_inventory(host, engine)) <= MAX_STATEMENTS
    host.advance(host.settings.stale_after_s + 60)
    host.service.evaluate_all(host.now())
    assert _active(host, "ProbeStale") == ["firing"]


def test_a_probe_restart_is_stored_despite_the_memo(host: SimHost, engine: Engine) -> None:
    """The memo covers the runtime fields too: a new probe start is written."""
    host.advance(30)
    report = build_report(host.fabric, ReportKind.INVENTORY, host.options, now=host.now)
    started = report.finished_at - timedelta(seconds=5)
    report = report.model_copy(update={
        "host": report.host.model_copy(update={"probe_started_at": started})})
    with host.sessions() as session:
        ingest(session, report, host.settings, host.now())
    with host.sessions() as session:
        stored = session.scalar(select(HostRuntime.probe_started_at))
    assert stored is not None and stored.replace(tzinfo=None) == started.replace(tzinfo=None)


def _inventory_with(host: SimHost, engine: Engine, code: int, gpu: int,
                    link: int | None = None) -> list[str]:
    """One inventory report 30 s on, its inventory unchanged, carrying an Xid `code` of
    `gpu` (and `link`) logged at the report's time, ingested and judged: its statements,
    as `_one_inventory`."""
    host.advance(30)
    event = FabricEvent(kind=EventKind.XID, code=code, at=host.now(), gpu=gpu, link=link,
                        sources=[EventSource.KMSG],
                        message=f"NVRM: Xid (PCI:0000:18:00): {code}, pid='<unknown>'")
    report = build_report(host.fabric, ReportKind.INVENTORY, host.options, now=host.now)
    report = report.model_copy(update={"events": [event]})
    with statements(engine) as seen:
        with host.sessions() as session:
            ingest(session, report, host.settings, host.now())
        host.evaluate()
    return [" ".join(s.split()) for s in seen if not any(t in s for t in SAMPLE_TABLES)]


def _gpu_verdict(host: SimHost, gpu: int) -> Verdict:
    with host.sessions() as session:
        health = host_health(session, host.settings, host.hostname)
    return next(g.verdict for g in health.gpus if g.gpu == gpu)


@pytest.mark.parametrize(("code", "link", "rule", "verdict"), [
    (74, 3, "XidWarning", Verdict.HEALTHY),  # one NVLink error: an alert, the verdict kept
    (79, None, "GPUMissing", Verdict.DOWN),  # off the bus: down at once, one page (issue 38)
], ids=["xid74", "xid79"])
def test_an_xid_on_an_unchanged_inventory_is_judged_at_that_report(
        host: SimHost, engine: Engine, code: int, link: int | None, rule: str,
        verdict: Verdict) -> None:
    """A healthy host on the fast path; its next inventory report, unchanged but for an
    Xid, is judged in full: the alert (and the GPU's verdict) come with that report, not
    at the next sweep up to 10 min later."""
    assert len(_one_inventory(host, engine)) <= MAX_STATEMENTS  # the fast path, before
    assert len(_inventory_with(host, engine, code, gpu=0, link=link)
               ) > MAX_STATEMENTS
    assert _active(host, rule) == ["firing"]
    assert _gpu_verdict(host, 0) is verdict


def test_an_event_is_judged_once_and_the_fast_path_resumes(
        host: SimHost, engine: Engine) -> None:
    """An application's Xid (13: shown, never an alert) costs one full judgement, at the
    report that carried it; the reports after it take the fast path again."""
    assert len(_inventory_with(host, engine, 13, gpu=1)) > MAX_STATEMENTS
    assert host.alerts() == []
    for _ in range(2):
        assert len(_one_inventory(host, engine)) <= MAX_STATEMENTS


def test_an_xid_warning_resolves_at_the_first_report_after_its_window(
        host: SimHost, engine: Engine) -> None:
    """Time alone ends an event's window: the warning's alert keeps the host off the fast
    path, so the first inventory report past the window resolves it."""
    _inventory_with(host, engine, 74, gpu=0, link=3)
    logged = host.now()
    while (host.now() - logged).total_seconds() + 30 <= 600:  # Xid 74's window (catalog's)
        host.step(30)  # a report still inside it
        assert _active(host, "XidWarning") == ["firing"]
    host.step(30)  # the first report past it
    assert [a.state for a in host.alerts(rule="XidWarning")] == ["resolved"]
    assert len(_one_inventory(host, engine)) <= MAX_STATEMENTS  # and the fast path is back
