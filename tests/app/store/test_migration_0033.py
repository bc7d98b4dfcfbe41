"""Migration 0033 with data, on SQLite and PostgreSQL: a host's GPU clocks, NIC ports and
pair series answer the same before and after it, both ways (clocks stored as lists after
it, turned back into objects on the way down), and the dropped `hw_counters` comes back
empty."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text

from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.probes.report import TestName
from peerwatch.probes.sim.faults import ThrottledGpu
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.app.conftest import PROBE_TOKEN, probe_headers
from tests.app.judged_client import JudgedClient
from tests.app.store.migrating import fresh_url, migrate

HOST = "hgx-a"
# a fixed window for the series: its default ends at each request's now
READS = (f"/api/v1/hosts/{HOST}",
         f"/api/v1/hosts/{HOST}/gpus/series?since={{since}}&until={{until}}",
         f"/api/v1/hosts/{HOST}/health")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from fresh_url(request, tmp_path)


def _answers(settings: Settings, since: datetime) -> list[Any]:
    with JudgedClient(create_app(settings)) as client:
        window = {"since": quote(since.isoformat()),
                  "until": quote((since + timedelta(hours=3)).isoformat())}
        return [_get(client, path.format(**window)) for path in READS]


def _get(client: TestClient, path: str) -> Any:
    answer = client.get(path)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    return {k: v for k, v in body.items() if k != "generated_at"}


def _column(engine: Engine, sql: str) -> list[Any]:
    with engine.connect() as conn:
        return [row[0] for row in conn.execute(text(sql))]


def test_0033_keeps_what_the_api_answers_both_ways(url: str) -> None:
    settings = Settings(database_url=url, probe_tokens=[PROBE_TOKEN])
    engine = make_engine(settings)
    try:
        migrate(engine, "head")
        fab = SimulatedFabric("hgx8", seed=3, hostname=HOST, faults=[ThrottledGpu(gpu=3)])
        report = build_report(fab, options=SweepOptions(tests=(TestName.CE_WRITE,)))
        assert any(c.nic_ports for c in report.counters), "the preset reads NIC ports"
        with JudgedClient(create_app(settings)) as client:
            posted = client.post("/api/v1/reports", content=report.model_dump_json(),
                                 headers={**probe_headers(), "Content-Type": "application/json"})
            assert posted.status_code == 201, posted.text
        since = report.started_at - timedelta(hours=1)
        at_head = _answers(settings, since)
        assert at_head[1]["gpus"][3]["power_limit_w"] == 450  # the clocks are there to keep
        assert _clocks(engine) and all(isinstance(c, list) for c in _clocks(engine))

        migrate(engine, "0032", down=True)
        stored = _clocks(engine)
        assert stored and all(isinstance(c, dict) for c in stored), "objects again"
        assert {c["power_limit_mw"] for c in stored} >= {450_000}
        assert set(_json(engine, "SELECT hw_counters FROM nic_port_samples")) == {"{}"}

        migrate(engine, "head")
        assert _answers(settings, since) == at_head
    finally:
        engine.dispose()


def _clocks(engine: Engine) -> list[Any]:
    rows = _column(engine, "SELECT clocks FROM gpu_samples")
    values = [json.loads(r) if isinstance(r, str) else r for r in rows]
    return [v for v in values if v is not None]


def _json(engine: Engine, sql: str) -> list[str]:
    return [r if isinstance(r, str) else json.dumps(r) for r in _column(engine, sql)]
