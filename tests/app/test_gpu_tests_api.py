"""Per-GPU tests (h2d, d2h, local) through the real server: schema 2 on the wire, schema 1
still accepted, strict validation, the history stored on the diagonal and the figures in the
host's health answer; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select

from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.history import Measurement, MeasurementKey, ReportRow
from peerwatch.probes.report import GPU_TESTS, Report, TestName, TransferResult, unit_of
from tests.app.conftest import probe_headers
from tests.app.factory import T0, sweep

URL = "/api/v1/reports"
H2D_BPS = {0: 54.6e9, 1: 20.0e9}  # GPU1: slow host copies on a full gen5 x16 link


def _post(client: TestClient, body: Any) -> Any:
    return client.post(URL, content=body if isinstance(body, str) else json.dumps(body),
                       headers={**probe_headers(), "Content-Type": "application/json"})


def _with_gpu_tests(report: Report) -> Report:
    extra = [TransferResult(test=t, src=g, value=H2D_BPS[g] if t is not TestName.LOCAL
                            else 2.05e12, unit=unit_of(t), samples=[1e9], verified=True,
                            gpu_time_s=0.001, started_at=T0)
             for t in GPU_TESTS for g in (0, 1)]
    return report.model_copy(update={"results": [*report.results, *extra]})


def test_a_version_1_report_is_still_stored(client: TestClient, settings: Settings) -> None:
    body = json.loads(sweep(n=2).model_dump_json())
    body["schema_version"] = 1
    r = _post(client, body)
    assert r.status_code == 201, r.text
    engine = make_engine(settings)
    try:
        with engine.connect() as conn:
            assert conn.scalar(select(ReportRow.schema_version)) == 1
    finally:
        engine.dispose()


def test_per_gpu_results_need_version_2_and_one_gpu(client: TestClient) -> None:
    body = json.loads(_with_gpu_tests(sweep(n=2)).model_dump_json())
    old = {**body, "schema_version": 1}
    r = _post(client, old)
    assert r.status_code == 422 and "test h2d needs schema_version 2" in r.text
    two_gpus = json.loads(json.dumps(body))
    h2d = next(x for x in two_gpus["results"] if x["test"] == "h2d")
    h2d["dst"] = 1
    r = _post(client, two_gpus)
    assert r.status_code == 422 and "h2d names one GPU: src set, dst null" in r.text
    r = _post(client, body)
    assert r.status_code == 201, r.text


def test_per_gpu_figures_are_stored_and_judged_per_gpu(client: TestClient,
                                                       settings: Settings) -> None:
    r = _post(client, _with_gpu_tests(sweep(n=2)).model_dump_json())
    assert r.status_code == 201 and r.json()["measurements"] == 2 + 6
    engine = make_engine(settings)
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(MeasurementKey.test, MeasurementKey.src,
                                       MeasurementKey.dst)
                                .join(Measurement, Measurement.key_id == MeasurementKey.id)
                                .where(MeasurementKey.test.in_([t.value for t in GPU_TESTS]))
                                ).all()
    finally:
        engine.dispose()
    assert sorted(rows) == sorted((t.value, g, g) for t in GPU_TESTS for g in (0, 1))
    health = client.get("/api/v1/hosts/node-a/health").json()
    by_gpu = {g["gpu"]: {t["test"]: t for t in g["tests"]} for g in health["gpus"]}
    fast, slow = by_gpu[0]["h2d"], by_gpu[1]["h2d"]
    assert fast["value"] == H2D_BPS[0] and fast["verdict"] == "healthy"
    assert fast["expected"] == 63.008e9 * 0.88
    assert fast["expected_basis"] == "PCIe gen5 x16 (63.0 GB/s) x 0.88"
    assert round(slow["ratio_expected"], 2) == 0.36  # one sample: low, watched, not yet degraded
    assert "GPU1 h2d 20.0 GB/s is 0.36 of expected 55.4 GB/s" in slow["reason"]
    assert by_gpu[0]["local"]["expected"] is None and by_gpu[0]["local"]["value"] == 2.05e12
    assert [p for p in health["pairs"] if p["src"] == p["dst"]] == []
    matrix = client.get("/api/v1/hosts/node-a/matrix", params={"test": "h2d"})
    assert matrix.status_code == 404  # a per-GPU test has no pair matrix
