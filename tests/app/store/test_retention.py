"""The maintenance job: hourly rollups built before raw samples are pruned, late reports
re-aggregated, old rows removed; long series read the rollups."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.retention import HOUR, floor_hour, run_maintenance
from peerwatch.app.store.tables.history import LinkSample, Measurement, MeasurementRollup, ReportRow
from peerwatch.probes.report import TestName
from tests.app.conftest import probe_headers
from tests.app.factory import T0, healthy, sweep
from tests.app.judged_client import JudgedClient

EXPECTED = healthy(0, 1, TestName.CE_WRITE) or 0.0


def _post_sweeps(client: TestClient, start: datetime, count: int, every: timedelta,
                 factor: float = 1.0) -> None:
    for i in range(count):
        report = sweep(n=2, at=start + i * every, counters={(0, 0): i},
                       value=lambda s, d, t: EXPECTED * factor)
        r = client.post("/api/v1/reports", content=report.model_dump_json(),
                        headers={**probe_headers(), "Content-Type": "application/json"})
        assert r.status_code == 201, r.text


def _count(session: Session, model: type) -> int:
    return session.scalar(select(func.count()).select_from(model)) or 0


def test_rollup_then_prune(settings: Settings) -> None:
    """Samples every 20 min for 4 hours, starting 16 days ago: rolled up, then pruned (on
    PostgreSQL whole days are dropped, so the samples' days must have ended 14 days ago)."""
    start = (datetime.now(UTC) - timedelta(days=16)).replace(minute=0, second=0, microsecond=0)
    app_settings = settings.model_copy(update={"retention_raw_days": 14.0})
    with JudgedClient(create_app(app_settings)) as client:
        _post_sweeps(client, start, 12, timedelta(minutes=20))
    engine = make_engine(app_settings)
    try:
        # As of start + 5 h: four completed hours, nothing old enough to prune yet.
        out = run_maintenance(engine, app_settings, now=start + timedelta(hours=5, minutes=1))
        assert (out.rolled_from, out.rolled_until) == (start, start + timedelta(hours=5))
        assert out.rollup_rows == 4 * 2  # 4 hours x 2 ordered pairs
        assert str(out).startswith(f"rolled up 8 rows (hours {start:%Y-%m-%d %H:%M}-"
                                   f"{start + timedelta(hours=5):%H:%M} UTC); pruned nothing")
        if engine.dialect.name == "sqlite":  # PostgreSQL may add "; made N day partitions"
            assert str(out).endswith("pruned nothing")
        with Session(engine) as s:
            row = s.scalars(select(MeasurementRollup).order_by(MeasurementRollup.hour)).first()
            assert row is not None
            assert (row.count, row.hour) == (3, start)
            assert row.min == pytest.approx(EXPECTED) and row.sum == pytest.approx(3 * EXPECTED)
        # Today: the raw samples are past 14 days and go; the rollups stay.
        out = run_maintenance(engine, app_settings)
        assert out.pruned is not None
        if engine.dialect.name == "sqlite":
            assert out.pruned["measurements"] == 24 and out.pruned["link_samples"] == 12
            assert "measurements 24" in str(out) and "MaintenanceResult" not in str(out)
        else:
            assert f"measurements_p{start:%Y%m%d}" in out.dropped
            assert f"measurements_p{start:%Y%m%d}" in str(out).split("dropped ", 1)[1]
        with Session(engine) as s:
            assert _count(s, Measurement) == 0 and _count(s, LinkSample) == 0
            assert _count(s, MeasurementRollup) == 8
            assert _count(s, ReportRow) == 12  # reports are kept a year: replays stay no-ops
    finally:
        engine.dispose()


def test_late_report_is_rolled_up_again(settings: Settings) -> None:
    with JudgedClient(create_app(settings)) as client:
        _post_sweeps(client, T0, 3, timedelta(minutes=10))
        engine = make_engine(settings)
        try:
            run_maintenance(engine, settings, now=T0 + timedelta(hours=2))
            _post_sweeps(client, T0 + timedelta(minutes=40), 1, timedelta(0), factor=0.5)
            run_maintenance(engine, settings, now=T0 + timedelta(hours=2))
            with Session(engine) as s:
                row = s.scalars(select(MeasurementRollup).where(
                    MeasurementRollup.src == 0, MeasurementRollup.hour == T0)).one()
                assert row.count == 4
                assert row.min == pytest.approx(EXPECTED * 0.5)
                # no unique index keeps a key's hour once (0035): the re-roll updated it
                key = (MeasurementRollup.host_id, MeasurementRollup.src, MeasurementRollup.dst,
                       MeasurementRollup.test, MeasurementRollup.hour)
                twice = s.execute(select(*key).group_by(*key).having(func.count() > 1)).all()
                assert twice == []
                assert s.scalar(select(func.count()).select_from(MeasurementRollup)) > 1
        finally:
            engine.dispose()


def test_long_series_reads_rollups_and_the_fresh_tail(settings: Settings) -> None:
    with JudgedClient(create_app(settings)) as client:
        _post_sweeps(client, T0, 6, timedelta(minutes=30))  # 3 hours
        engine = make_engine(settings)
        try:
            run_maintenance(engine, settings, now=T0 + timedelta(hours=2))  # rolls 2 hours
        finally:
            engine.dispose()
        r = client.get("/api/v1/hosts/node-a/series", params={
            "src": 0, "dst": 1, "since": (T0 - timedelta(days=6)).isoformat(),
            "until": (T0 + timedelta(days=1)).isoformat(), "step": 3600})
        s = r.json()
        assert r.status_code == 200, s
        assert s["source"] == "hourly"
        assert [b["count"] for b in s["buckets"]] == [2, 2, 2]  # 2 rolled + 1 raw hour
        assert s["buckets"][0]["start"].startswith(T0.strftime("%Y-%m-%dT%H:00:00"))
        r = client.get("/api/v1/hosts/node-a/series", params={
            "src": 0, "dst": 1, "since": (T0 - timedelta(days=6)).isoformat(),
            "until": (T0 + timedelta(days=1)).isoformat(), "step": 600})
        assert r.status_code == 422 and "multiple of 3600" in r.json()["detail"][0]["msg"]


def test_an_hour_is_rolled_up_once_its_hosts_swept_past_it(settings: Settings) -> None:
    """A host heard lately whose sweeps are still in an hour (a backlog sent at once) holds
    that hour's rollups back until a sweep of it finished past the hour is stored, so each
    row is written once; a host not heard for `stale_after_s` holds nothing back."""
    settings = settings.model_copy(update={"stale_after_s": 3600.0})  # heard, however slow
    hour = floor_hour(datetime.now(UTC)) - timedelta(hours=3)
    with JudgedClient(create_app(settings)) as client:
        engine = make_engine(settings)
        try:
            _post_sweeps(client, hour + timedelta(minutes=10), 2, timedelta(minutes=30))
            out = run_maintenance(engine, settings)
            assert out.rolled_until is None and out.rollup_rows == 0  # its hour goes on
            _post_sweeps(client, hour + timedelta(minutes=70), 1, timedelta(0))
            out = run_maintenance(engine, settings)
            assert (out.rolled_from, out.rolled_until) == (hour, hour + HOUR)
            with Session(engine) as s:
                counts = s.execute(select(MeasurementRollup.hour, MeasurementRollup.count)
                                   .order_by(MeasurementRollup.src)).all()
                assert counts == [(hour, 2), (hour, 2)]  # both ordered pairs, both sweeps
            later = datetime.now(UTC) + timedelta(seconds=settings.stale_after_s + 60)
            out = run_maintenance(engine, settings, now=later)  # not heard since: stale
            assert out.rolled_until == floor_hour(later)
            with Session(engine) as s:
                assert s.scalars(select(MeasurementRollup.count).where(
                    MeasurementRollup.hour == hour + HOUR)).all() == [1, 1]
        finally:
            engine.dispose()
