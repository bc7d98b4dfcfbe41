"""Heartbeats on the server (app/routes/heartbeats.py): a host that has not changed since a
full report writes nothing but its last-heard time; one whose full report this server does
not hold (restart, wiped database) is asked for a full one (409); bad heartbeats are refused
naming what was wrong. On SQLite and PostgreSQL (the `client` fixture's two databases)."""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, select, update

from peerwatch.app.ingest.heard import heard_for
from peerwatch.app.ingest.held import GRACE_S
from peerwatch.app.judging.service import service_for
from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.alerts import Alert
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.heartbeat import HEARTBEATS_PATH, RESYNC_STATUS, Heartbeat
from tests.app.conftest import credential, judge_later, probe_headers
from tests.app.factory import sweep
from tests.app.judged_client import JudgedClient
from tests.app.metrics_helpers import value
from tests.app.statement_log import statements


def _full(client: TestClient, host: str = "node-a", at: datetime | None = None) -> uuid.UUID:
    report = sweep(host=host, n=2, at=at or datetime.now(UTC) - timedelta(seconds=5))
    answer = client.post("/api/v1/reports", content=report.model_dump_json(),
                         headers=probe_headers())
    assert answer.status_code == 201, answer.text
    return report.report_id


def _beat(client: TestClient, base: uuid.UUID, host: str = "node-a",
          at: datetime | None = None, headers: dict[str, str] | None = None) -> Any:
    beat = Heartbeat(host=host, base_report_id=base, at=at or datetime.now(UTC))
    return client.post(HEARTBEATS_PATH, content=beat.model_dump_json(),
                       headers=headers or probe_headers())


def _flush(client: TestClient) -> int:
    return heard_for(client.app).flush(client.app.state.sessionmaker)


def _heard_at(client: TestClient, host: str = "node-a") -> datetime | None:
    with client.app.state.sessionmaker() as session:
        heard = session.scalar(select(Host.last_heard_at).where(Host.name == host))
    return heard if heard is None or heard.tzinfo else heard.replace(tzinfo=UTC)


def test_a_heartbeat_writes_nothing_but_the_hosts_last_heard_time(client: TestClient) -> None:
    base = _full(client)
    _flush(client)
    before = _heard_at(client)
    with statements(client.app.state.engine) as sent:
        answer = _beat(client, base)
    assert answer.status_code == 204, answer.text
    assert sent == []  # answered from memory: no statement at all
    with statements(client.app.state.engine) as sent:
        assert _flush(client) == 1
    writes = [s for s in sent if not s.lstrip().upper().startswith(("SELECT", "BEGIN",
                                                                     "COMMIT"))]
    assert len(writes) == 1 and writes[0].lstrip().upper().startswith("UPDATE HOSTS")
    assert "last_heard_at" in writes[0]
    heard = _heard_at(client)
    assert heard is not None and (before is None or heard > before)


def test_a_heartbeat_on_a_report_not_held_here_asks_for_a_full_report(
        client: TestClient) -> None:
    unknown = _beat(client, uuid.uuid4())  # a host this server never stored
    assert unknown.status_code == RESYNC_STATUS
    assert "send a full report" in unknown.json()["detail"]
    base = _full(client)
    other = _full(client, host="node-b")
    assert _beat(client, other).status_code == RESYNC_STATUS  # another host's report
    assert _beat(client, base).status_code == 204


def test_a_host_gone_from_the_database_is_asked_for_a_full_report(client: TestClient) -> None:
    base = _full(client)
    assert _beat(client, base).status_code == 204
    with client.app.state.sessionmaker() as session:  # the database lost the host
        session.execute(delete(Host).where(Host.name == "node-a"))
        session.commit()
    assert _beat(client, base).status_code == 204  # not yet known: the flush finds it
    _flush(client)  # within GRACE_S of its report: its rows may be on their way (serve)
    assert _beat(client, base).status_code == 204
    held = client.app.state.held
    held.clock = lambda: time.monotonic() + GRACE_S + 1
    _flush(client)
    assert _beat(client, base).status_code == RESYNC_STATUS
    assert _beat(client, _full(client)).status_code == 204


def test_heartbeats_keep_a_probe_from_going_stale(client: TestClient) -> None:
    old = datetime.now(UTC) - timedelta(minutes=30)  # its full report is old
    base = _full(client, at=old)
    _flush(client)
    with client.app.state.sessionmaker() as session:  # and was received then
        session.execute(update(Host).where(Host.name == "node-a").values(
            last_received_at=old, last_report_at=old, last_heard_at=old))
        session.commit()
    # the server listened then (a probe silent across a restart is test_restart_grace.py's)
    service_for(client.app).listening_since = old - timedelta(minutes=1)
    judge_later(client, 0)
    assert _stale(client) == (True, True)  # silent since: stale, ProbeStale
    assert _beat(client, base).status_code == 204  # then it beats
    _flush(client)
    judge_later(client, 0)
    assert _stale(client) == (False, False)


def test_heartbeats_keep_the_prometheus_twin_of_probe_stale_quiet(client: TestClient) -> None:
    """ProbeStale's PromQL twin judges `time() - peerwatch_probe_last_received_timestamp_
    seconds > 90`: a steady host's newest full report is up to a keyframe (5 min) old, so the
    series must be when the server last heard the probe, heartbeats included, as the
    server's own rule reads it; a silent probe's series still ages past the limit."""
    old = datetime.now(UTC) - timedelta(minutes=4)  # a keyframe's age, nearly
    base = _full(client, at=old)
    _full(client, host="node-b", at=old)
    _flush(client)
    with client.app.state.sessionmaker() as session:  # both full reports received then
        session.execute(update(Host).values(last_received_at=old, last_report_at=old,
                                            last_heard_at=old))
        session.commit()
    assert _beat(client, base).status_code == 204  # node-a beats; node-b is silent
    _flush(client)
    judge_later(client, 0)
    text = client.get("/metrics").text
    now = datetime.now(UTC).timestamp()
    ages = {h: now - (value(text, "peerwatch_probe_last_received_timestamp_seconds", host=h)
                      or 0) for h in ("node-a", "node-b")}
    limit = client.app.state.settings.stale_after_s
    assert ages["node-a"] < limit < ages["node-b"], ages  # the twin: node-b alone
    assert client.get("/api/v1/hosts/node-a").json()["stale"] is False  # the server agrees
    assert client.get("/api/v1/hosts/node-b").json()["stale"] is True


def _stale(client: TestClient) -> tuple[bool, bool]:
    """Is node-a stale, and is its ProbeStale alert firing or pending?"""
    with client.app.state.sessionmaker() as session:
        firing = session.scalars(select(Alert.rule).where(
            Alert.state.in_(("firing", "pending")))).all()
    return client.get("/api/v1/hosts/node-a").json()["stale"], "ProbeStale" in firing


GOOD = {"schema_version": 5, "host": "node-a", "at": "2026-12-06T10:00:00Z"}


@pytest.mark.parametrize("change, status, words", [
    ({"schema_version": 4}, 400, "schema_version"),
    ({"host": "node a"}, 422, "host"),
    ({"base_report_id": "not-a-uuid"}, 422, "base_report_id"),
    ({"at": "2026-12-06T10:00:00"}, 422, "at"),  # no time zone
    ({"x": 1}, 422, "x"),
    ({"pad": "y" * 5000}, 413, "heartbeat"),
])
def test_a_bad_heartbeat_is_refused_naming_what_was_wrong(
        client: TestClient, change: dict[str, Any], status: int, words: str) -> None:
    body = {**GOOD, "base_report_id": str(uuid.uuid4()), **change}
    answer = client.post(HEARTBEATS_PATH, content=json.dumps(body), headers=probe_headers())
    assert answer.status_code == status, answer.text
    assert words in answer.text


def test_a_heartbeat_for_another_host_is_forbidden(client: TestClient) -> None:
    base = _full(client, host="node-b")
    mine = credential(client, "probe", "node-a")
    assert _beat(client, base, host="node-b", headers=mine).status_code == 403
    assert client.post(HEARTBEATS_PATH, content=b"{}").status_code == 401


def test_a_restarted_server_finds_the_report_in_its_database_once(
        client: TestClient, settings: Settings) -> None:
    base = _full(client)
    assert _beat(client, base).status_code == 204
    with JudgedClient(create_app(settings)) as restarted:  # the same database, a new process
        with statements(restarted.app.state.engine) as sent:
            assert _beat(restarted, base).status_code == 204  # found in the database, once
            assert _beat(restarted, base).status_code == 204  # then from memory
        assert len([s for s in sent if "report_id" in s]) == 1
        assert _beat(restarted, uuid.uuid4()).status_code == RESYNC_STATUS  # never stored
        again = _full(restarted)
        assert _beat(restarted, again).status_code == 204
