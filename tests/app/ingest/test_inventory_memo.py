"""An unchanged inventory writes no inventory row, but never hides a change another replica
wrote: two apps on one database, as two `serve` processes would be."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import select

from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.inventory import NvLink
from peerwatch.probes.report import Report
from tests.app.conftest import probe_headers
from tests.app.factory import T0, sweep
from tests.app.judged_client import JudgedClient


def _post(client: TestClient, report: Report) -> None:
    r = client.post("/api/v1/reports", content=report.model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text


def _link_state(settings: Settings) -> str:
    engine = make_engine(settings)
    try:
        with engine.connect() as conn:
            state = conn.scalar(select(NvLink.state).where(NvLink.gpu == 0, NvLink.link == 0))
        assert state is not None
        return state
    finally:
        engine.dispose()


def test_unchanged_inventory_is_memoised_but_another_replicas_change_is_seen(
        settings: Settings) -> None:
    at = [T0 + timedelta(minutes=k) for k in range(4)]
    with JudgedClient(create_app(settings)) as a, JudgedClient(create_app(settings)) as b:
        _post(a, sweep(at=at[0]))
        _post(a, sweep(at=at[1]))  # same inventory: the memo's, no inventory row written
        assert _link_state(settings) == "up"
        _post(b, sweep(at=at[2], down_links=[(0, 0)]))  # the other replica: link down
        assert _link_state(settings) == "down"
        _post(a, sweep(at=at[3]))  # a's memo says "up, unchanged": it must not trust it
        assert _link_state(settings) == "up"
