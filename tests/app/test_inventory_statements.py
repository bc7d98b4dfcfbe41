"""An unchanged inventory from a healthy 8-GPU host costs a handful of statements in one
transaction: the host row (locked), the report row, the GPUs' `last_seen_at`, the host's
times, and the counter samples. Nothing re-reads or rewrites the GPUs, ports, pairs or the
runtime row, and a change to any of them (a probe restart included) is still stored."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import event, select

from app.config import Settings
from app.db import make_engine, make_sessionmaker, upgrade_to_head
from app.models import HostRuntime, NvLink
from app.services.ingest import ingest
from probes.report import Report, ReportKind
from probes.sim.faults import LinksDown
from probes.sim.simulated import SimulatedFabric
from probes.sweep import build_report

# SELECT host FOR UPDATE, INSERT report, UPDATE gpus (last_seen_at), UPDATE hosts
MAX_STATEMENTS = 4
SAMPLE_TABLES = ("link_samples", "gpu_samples")  # COPY on PostgreSQL, an INSERT on SQLite
T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)


def _inventory(k: int, **fabric: Any) -> Report:
    """The hgx8 host's inventory report number `k` (30 s apart), as its probe builds it."""
    report = build_report(SimulatedFabric("hgx8", seed=3, hostname="inv-host", **fabric),
                          kind=ReportKind.INVENTORY)
    at = T0 + timedelta(seconds=30 * k)
    return report.model_copy(update={"report_id": uuid.uuid4(), "started_at": at,
                                     "finished_at": at + timedelta(seconds=1)})


@contextmanager
def _statements(engine: Any) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        seen.append(" ".join(statement.split())[:120])
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def _setup(settings: Settings) -> tuple[Any, Any]:
    engine = make_engine(settings)
    upgrade_to_head(engine)
    return engine, make_sessionmaker(engine)


def _ingest(sessions: Any, settings: Settings, report: Report) -> None:
    with sessions() as session:
        result = ingest(session, report, settings, report.finished_at + timedelta(seconds=1))
    assert not result.duplicate


def test_an_unchanged_inventory_runs_a_handful_of_statements(settings: Settings) -> None:
    engine, sessions = _setup(settings)
    try:
        for k in range(3):  # the first stores the shape; the memo trusts it from then on
            _ingest(sessions, settings, _inventory(k))
        with _statements(engine) as seen:
            _ingest(sessions, settings, _inventory(3))
    finally:
        engine.dispose()
    statements = [s for s in seen if not any(t in s for t in SAMPLE_TABLES)]
    assert len(statements) <= MAX_STATEMENTS, "\n".join(statements)
    for table in ("host_runtime", "nvlinks", "pairs"):
        assert not [s for s in statements if table in s], "\n".join(statements)


def test_a_changed_link_or_probe_restart_is_stored_despite_the_memo(settings: Settings) -> None:
    engine, sessions = _setup(settings)
    try:
        for k in range(3):
            _ingest(sessions, settings, _inventory(k))
        restarted = _inventory(3)
        started = restarted.finished_at - timedelta(seconds=5)
        restarted = restarted.model_copy(update={
            "host": restarted.host.model_copy(update={"probe_started_at": started})})
        _ingest(sessions, settings, restarted)
        with engine.connect() as conn:
            stored_start = conn.scalar(select(HostRuntime.probe_started_at))
        _ingest(sessions, settings, _inventory(4, faults=[LinksDown(gpu=1, links=(0,))]))
        with engine.connect() as conn:
            down = conn.scalar(select(NvLink.state).where(NvLink.gpu == 1, NvLink.link == 0))
    finally:
        engine.dispose()
    assert stored_start is not None and stored_start.replace(tzinfo=UTC) == started
    assert down == "down"
