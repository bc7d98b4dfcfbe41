"""POST /api/v1/reports: auth, limits, validation naming the field, idempotency,
all-or-nothing; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from peerwatch.app.ingest import rows as ingest_service
from peerwatch.app.main import create_app
from peerwatch.app.queries.counters import link_rates
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.inventory_memo import MEMO_KEY, InventoryMemo
from peerwatch.app.store.tables.history import (
    GpuSample,
    LinkSample,
    Measurement,
    ReportRow,
)
from peerwatch.app.store.tables.inventory import Gpu, Host
from peerwatch.probes.report import ReportKind, TestName, utcnow
from tests.app.conftest import probe_headers
from tests.app.factory import T0, sweep
from tests.app.judged_client import JudgedClient

URL = "/api/v1/reports"


def _counts(settings: Settings) -> dict[str, int]:
    engine = make_engine(settings)
    try:
        with engine.connect() as conn:
            return {m.__tablename__: conn.scalar(select(func.count()).select_from(m)) or 0
                    for m in (Host, Gpu, ReportRow, Measurement, LinkSample)}
    finally:
        engine.dispose()


def _post(client: TestClient, body: Any, **kw: Any) -> Any:
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    headers = {**probe_headers(), "Content-Type": "application/json", **kw.pop("headers", {})}
    return client.post(URL, content=data, headers=headers, **kw)


def test_report_is_stored(client: TestClient, settings: Settings) -> None:
    report = sweep(n=2, tests=[TestName.CE_WRITE, TestName.LATENCY], counters={(0, 0): 5})
    r = _post(client, report.model_dump_json())
    assert r.status_code == 201, r.text
    assert r.json() == {"report_id": str(report.report_id), "host": "node-a",
                        "duplicate": False, "measurements": 4, "counter_samples": 1}
    assert _counts(settings) == {"hosts": 1, "gpus": 2, "reports": 1, "measurements": 4,
                                 "link_samples": 1}


def test_replay_changes_nothing(client: TestClient, settings: Settings) -> None:
    body = sweep(n=2).model_dump_json()
    assert _post(client, body).status_code == 201
    before = _counts(settings)
    again = _post(client, body)
    assert again.status_code == 200
    assert again.json()["duplicate"] is True
    assert again.json()["measurements"] == 2
    assert _counts(settings) == before


def test_concurrent_duplicates_store_once(settings: Settings) -> None:
    body = sweep(n=2).model_dump_json()
    with JudgedClient(create_app(settings)) as a, JudgedClient(create_app(settings)) as b:
        with ThreadPoolExecutor(4) as pool:
            codes = sorted(pool.map(lambda c: _post(c, body).status_code, [a, b, a, b]))
    assert codes == [200, 200, 200, 201]
    assert _counts(settings)["reports"] == 1


def test_without_token_is_401_and_wrong_token_is_403(client: TestClient) -> None:
    body = sweep().model_dump_json()
    r = client.post(URL, content=body)
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    r = _post(client, body, headers={"Authorization": "Bearer nope"})
    assert r.status_code == 403
    assert "not a valid probe credential" in r.json()["detail"]


def test_body_over_limit_is_413(settings: Settings) -> None:
    small = settings.model_copy(update={"max_body_bytes": 2048})
    with JudgedClient(create_app(small)) as client:
        r = _post(client, sweep(n=4).model_dump_json())
    assert r.status_code == 413
    assert "limit of 2048 bytes" in r.json()["detail"]


def test_unknown_schema_version_is_400_naming_supported(client: TestClient,
                                                        settings: Settings) -> None:
    body = json.loads(sweep().model_dump_json())
    body["schema_version"] = 7
    body["surprise"] = "fields a future version adds"
    r = _post(client, body)
    assert r.status_code == 400
    assert r.json()["detail"] == ("unsupported schema_version 7; this server supports "
                                  "[1, 2, 3, 4, 5]")
    assert _counts(settings)["reports"] == 0


def _loc_of(response: Any) -> list[list[Any]]:
    assert response.status_code == 422, response.text
    return [e["loc"] for e in response.json()["detail"]]


@pytest.mark.parametrize("bad", ["NaN", "-1.0"])
def test_impossible_value_is_422_naming_the_field(client: TestClient, settings: Settings,
                                                  bad: str) -> None:
    data = json.loads(sweep().model_dump_json())
    text = json.dumps(data).replace(f'"value": {data["results"][0]["value"]}',
                                    f'"value": {bad}', 1)
    assert ["body", "results", 0, "value"] in _loc_of(_post(client, text))
    assert _counts(settings)["reports"] == 0


def test_absurd_value_is_422_naming_the_result_and_value(client: TestClient) -> None:
    data = json.loads(sweep().model_dump_json())
    data["results"][0]["value"] = 1e14
    r = _post(client, data)
    assert _loc_of(r) == [["body", "results", 0]]  # the wire model checks it per result
    assert "value 1e+14 B/s is beyond any real fabric" in r.json()["detail"][0]["msg"]


def test_schema_error_names_the_field(client: TestClient) -> None:
    data = json.loads(sweep().model_dump_json())
    data["inventory"]["gpus"][1]["memory_total_bytes"] = "lots"
    del data["host"]["hostname"]
    locs = _loc_of(_post(client, data))
    assert ["body", "inventory", "gpus", 1, "memory_total_bytes"] in locs
    assert ["body", "host", "hostname"] in locs


def test_invalid_json_is_422(client: TestClient) -> None:
    r = _post(client, b"{not json")
    assert r.status_code == 422
    assert "not valid JSON" in r.json()["detail"][0]["msg"]


def test_incoherent_report_is_422_naming_the_field(client: TestClient) -> None:
    data = json.loads(sweep().model_dump_json())
    data["inventory"]["nvlinks"].append(dict(data["inventory"]["nvlinks"][0]))
    data["finished_at"] = (utcnow().replace(year=2099)).isoformat()
    locs = _loc_of(_post(client, data))
    assert ["body", "inventory", "nvlinks", 36] in locs
    assert ["body", "finished_at"] in locs


def test_naive_timestamp_is_422(client: TestClient) -> None:
    data = json.loads(sweep(counters={(0, 0): 1}).model_dump_json())
    data["counters"][0]["at"] = "2026-11-30T08:00:00"
    assert ["body", "counters", 0, "at"] in _loc_of(_post(client, data))


def test_oversized_counter_is_422(client: TestClient) -> None:
    data = json.loads(sweep().model_dump_json())
    data["results"][1]["foreign_bytes"] = 2**64
    assert _loc_of(_post(client, data)) == [["body", "results", 1, "foreign_bytes"]]


def test_failure_midway_stores_nothing(client: TestClient, settings: Settings,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The last step of an ingest fails after host, inventory, report and measurements were
    written: none of it may remain."""
    good = sweep(n=2)
    assert _post(client, good.model_dump_json()).status_code == 201
    before = _counts(settings)

    real_insert = ingest_service.insert_rows

    def fail(session: Any, model: Any, rows: Any) -> None:
        if model is GpuSample:  # the last table written, after measurements and links
            raise RuntimeError("disk full (injected)")
        real_insert(session, model, rows)

    monkeypatch.setattr(ingest_service, "insert_rows", fail)
    bigger = sweep(n=3, host="node-b", at=good.started_at + timedelta(hours=1),
                   counters={(0, 0): 1})
    r = _post(JudgedClient(client.app, raise_server_exceptions=False), bigger.model_dump_json())
    assert r.status_code == 500
    assert _counts(settings) == before


def test_new_report_id_stores_again(client: TestClient, settings: Settings) -> None:
    a, b = sweep(n=2), sweep(n=2, report_id=uuid.uuid4())
    assert _post(client, a.model_dump_json()).status_code == 201
    assert _post(client, b.model_dump_json()).status_code == 201
    assert _counts(settings)["measurements"] == 4


@pytest.mark.parametrize("memo", ["kept", "lost"])
def test_unmoved_link_counters_are_stored_only_at_keyframes(client: TestClient,
                                                             settings: Settings,
                                                             memo: str) -> None:
    """An inventory report every 30 s: every port is written first, then only when its error
    counters moved (its tx/rx bytes stand still: no LINK_KEYFRAME_S keyframe either, only
    one every LINK_IDLE_KEYFRAME_S); the rates the judge reads are those of every reading.
    The same rows when the process's memo is lost before each report (another worker, a
    restart): what each port read is then read back."""
    ports = {(0, 0): 100, (0, 1): 100, (1, 0): 100}
    info = client.app.state.sessionmaker.kw["info"]  # type: ignore[attr-defined]
    for i in range(12):
        if memo == "lost":
            info[MEMO_KEY] = InventoryMemo()
        errors = {(0, 1): 8 if i >= 6 else 5}
        report = sweep(at=T0 + timedelta(seconds=30 * i), counters=ports, error_counts=errors,
                       tests=(), kind=ReportKind.INVENTORY)
        assert _post(client, report.model_dump_json()).status_code == 201
    engine = make_engine(settings)
    try:
        with Session(engine) as s:
            rows = s.execute(select(LinkSample.at, LinkSample.gpu, LinkSample.link)
                             .order_by(LinkSample.at, LinkSample.gpu, LinkSample.link)).all()
            host_id = s.scalar(select(Host.id))
            rates = link_rates(s, host_id, T0)
    finally:
        engine.dispose()
    assert [(at - T0, (g, k)) for at, g, k in rows] == [  # 4 of 36 readings
        (timedelta(0), (0, 0)), (timedelta(0), (0, 1)), (timedelta(0), (1, 0)),
        (timedelta(seconds=180), (0, 1))]  # it moved; the others unmoved since LINK_KEYFRAME_S
    assert rates[(0, 1)]["replay"] == pytest.approx(3 / 330)
    assert rates[(0, 0)] == rates[(1, 0)] == {"replay": 0.0, "recovery": 0.0, "crc_flit": 0.0}
