"""Caps tied to real hosts: at most 64 GPUs per host, and results and
counter rows per report bounded by the report's own GPU and NVLink port counts, refused
before any storage work (a 1024-GPU report was once accepted and stored at great cost)."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from peerwatch.app.api.report_checks import COUNTER_SAMPLES_PER_PORT
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.history import ReportRow
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import MAX_GPUS
from tests.app.conftest import probe_headers
from tests.app.factory import LINKS, gpu, sweep

URL = "/api/v1/reports"


def _post(client: TestClient, data: dict[str, Any]) -> Any:
    return client.post(URL, content=json.dumps(data),
                       headers={**probe_headers(), "Content-Type": "application/json"})


def _nothing_stored(settings: Settings) -> bool:
    engine = make_engine(settings)
    try:
        with engine.connect() as conn:
            rows = conn.scalar(select(func.count()).select_from(ReportRow))
            hosts = conn.scalar(select(func.count()).select_from(Host))
            return rows == 0 and hosts == 0
    finally:
        engine.dispose()


def _with_gpus(n: int) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(sweep(n=2).model_dump_json())
    data["inventory"]["gpus"] = [json.loads(gpu(i % MAX_GPUS).model_dump_json())
                                 for i in range(n)]
    for i, item in enumerate(data["inventory"]["gpus"]):
        item["index"], item["uuid"] = i, f"GPU-{i:05d}"
    return data


def test_a_1024_gpu_report_is_refused_unstored(client: TestClient, settings: Settings) -> None:
    r = _post(client, _with_gpus(1024))
    assert r.status_code == 422, r.text
    assert f"at most {MAX_GPUS}" in r.text
    assert _nothing_stored(settings)


def test_one_gpu_past_the_cap_is_refused(client: TestClient, settings: Settings) -> None:
    r = _post(client, _with_gpus(MAX_GPUS + 1))
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][:3] == [
        "body", "inventory", "gpus"], r.text
    assert _nothing_stored(settings)


def test_more_link_counters_than_ports_is_refused(client: TestClient,
                                                  settings: Settings) -> None:
    data: dict[str, Any] = json.loads(sweep(n=2, counters={(0, 0): 5}).model_dump_json())
    data["inventory"]["nvlinks"] = []
    assert len(data["counters"][0]["links"]) == 1
    r = _post(client, data)
    assert r.status_code == 422 and "lists 0 NVLink ports" in r.text, r.text
    assert r.json()["detail"][0]["loc"] == ["body", "counters", 0, "links"]
    assert _nothing_stored(settings)


EVERY_PORT = {(g, k): 5 for g in range(2) for k in range(LINKS)}


def test_more_counter_samples_than_ports_allow_is_refused(client: TestClient,
                                                          settings: Settings) -> None:
    data: dict[str, Any] = json.loads(sweep(n=2, counters=EVERY_PORT).model_dump_json())
    data["counters"] = data["counters"] * (COUNTER_SAMPLES_PER_PORT + 1)
    r = _post(client, data)
    assert r.status_code == 422 and "link counter rows" in r.text, r.text
    assert _nothing_stored(settings)


def test_a_report_at_the_caps_is_stored(client: TestClient) -> None:
    data: dict[str, Any] = json.loads(sweep(n=2, counters=EVERY_PORT).model_dump_json())
    data["counters"] = data["counters"] * COUNTER_SAMPLES_PER_PORT
    r = _post(client, data)
    assert r.status_code == 201, r.text
