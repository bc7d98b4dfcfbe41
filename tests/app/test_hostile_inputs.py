"""Every input that once gave a 500 now gets a 4xx naming what was wrong, on
SQLite and PostgreSQL; and nothing of a refused report is stored."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from peerwatch.app.api.report_checks import result_limit
from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.history import ReportRow
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import HOSTNAME_RULE, MAX_COUNTER_SAMPLES, TestName
from tests.app.conftest import ADMIN_TOKEN, probe_headers
from tests.app.factory import sweep
from tests.app.judged_client import JudgedClient

URL = "/api/v1/reports"
Mutation = Callable[[dict[str, Any]], None]


def _report() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(sweep(n=2, counters={(0, 0): 5}).model_dump_json())
    return data


def _set(path: str, value: Any) -> Mutation:
    """A mutation setting the dotted `path` (list indexes as numbers) to `value`."""
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]

    def mutate(data: dict[str, Any]) -> None:
        node: Any = data
        for key in parents:
            node = node[key]
        node[last] = value

    return mutate


def _post_raw(client: TestClient, body: str | bytes) -> Any:
    headers = {**probe_headers(), "Content-Type": "application/json"}
    return client.post(URL, content=body, headers=headers)


def _stored(settings: Settings) -> int:
    engine = make_engine(settings)
    try:
        with engine.connect() as conn:
            return conn.scalar(select(func.count()).select_from(ReportRow)) or 0
    finally:
        engine.dispose()


BIG = 2**31
HOSTILE: dict[str, tuple[Mutation, str]] = {
    "int over 64 bits as a string": (
        _set("inventory.gpus.0.memory_total_bytes", "99999999999999999999"), "valid integer"),
    "copies over int4": (_set("results.0.copies", BIG), "less than or equal"),
    "numa_node over int4": (_set("inventory.gpus.0.numa_node", BIG), "less than or equal"),
    "dropped_reports over int4": (_set("cost.dropped_reports", BIG), "less than or equal"),
    "compute_processes over int4": (
        _set("counters.0.activity.0.compute_processes", BIG), "less than or equal"),
    "nvlink_count over int4": (_set("inventory.gpus.0.nvlink_count", BIG), "less than or"),
    "nvlink version over 16 chars": (_set("inventory.nvlinks.0.version", "4" * 17), "at most 16"),
    "remote_pci_bus_id over 32 chars": (
        _set("inventory.nvlinks.0.remote_pci_bus_id", "0" * 33), "at most 32"),
    "NUL in the hostname": (_set("host.hostname", "node\x00a"), "NUL"),
    "NUL in a GPU uuid": (_set("inventory.gpus.0.uuid", "GPU-\x00"), "NUL"),
    "lone surrogate in the hostname": (_set("host.hostname", "node\ud800"), "lone surrogate"),
    "year 1 started_at": (_set("started_at", "0001-01-01T00:30:00+01:00"), "year 1"),
    "started_at without a zone": (_set("started_at", "2026-11-30T10:00:00"), "time zone"),
    "host name with a slash": (_set("host.hostname", "rack1/node2"), "breaks the rule"),
    "host name '.'": (_set("host.hostname", "."), "breaks the rule"),
    "host name '..'": (_set("host.hostname", ".."), "breaks the rule"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_report_is_a_422_naming_the_problem(case: str, client: TestClient,
                                                     settings: Settings) -> None:
    mutate, words = HOSTILE[case]
    data = _report()
    mutate(data)
    body = json.dumps(data, ensure_ascii=True)  # a lone surrogate travels as \ud800
    r = _post_raw(client, body)
    assert r.status_code == 422, r.text
    assert words in r.text
    assert _stored(settings) == 0


def test_host_name_rule_is_named(client: TestClient) -> None:
    data = _report()
    data["host"]["hostname"] = "a..b"
    r = _post_raw(client, json.dumps(data))
    assert r.status_code == 422 and HOSTNAME_RULE in r.json()["detail"][0]["msg"]


def test_accepted_host_names_are_reachable(client: TestClient) -> None:
    for name in ("node_01", "rack1.node-2.example.com", "GPU-17"):
        data = _report()
        data["host"]["hostname"] = name
        assert _post_raw(client, json.dumps(data)).status_code == 201
        assert client.get(f"/api/v1/hosts/{name}").status_code == 200


def test_json_nested_deeply_is_a_422(client: TestClient, settings: Settings) -> None:
    body = '{"schema_version": 1, "inventory": ' + "[" * 100_000 + "]" * 100_000 + "}"
    r = _post_raw(client, body)
    assert r.status_code == 422 and "too deeply" in r.text
    assert _stored(settings) == 0


def test_more_results_than_the_inventory_allows_is_a_422(client: TestClient,
                                                          settings: Settings) -> None:
    data = _report()
    data["results"] = data["results"] * 500  # 1000 results for a 2-GPU host
    r = _post_raw(client, json.dumps(data))
    assert r.status_code == 422 and f"allows at most {result_limit(2)}" in r.text
    assert _stored(settings) == 0


def test_more_counter_samples_than_allowed_is_a_422(client: TestClient,
                                                   settings: Settings) -> None:
    data = _report()
    data["counters"] = data["counters"] * (MAX_COUNTER_SAMPLES + 1)
    r = _post_raw(client, json.dumps(data))
    assert r.status_code == 422 and f"at most {MAX_COUNTER_SAMPLES}" in r.text
    assert _stored(settings) == 0


def test_duplicate_pair_test_results_are_a_422(client: TestClient, settings: Settings) -> None:
    data = json.loads(sweep(n=2, tests=[TestName.CE_WRITE]).model_dump_json())
    data["results"].append(data["results"][0])
    r = _post_raw(client, json.dumps(data))
    assert r.status_code == 422 and "duplicate result" in r.text
    assert r.json()["detail"][0]["loc"] == ["body", "results", 2]
    assert _stored(settings) == 0


def test_reused_report_id_with_another_body_is_a_409(client: TestClient,
                                                      settings: Settings) -> None:
    report_id = uuid.uuid4()
    first = sweep(n=2, report_id=report_id)
    assert _post_raw(client, first.model_dump_json()).status_code == 201
    assert _post_raw(client, first.model_dump_json()).status_code == 200  # a retry
    other = sweep(n=2, host="node-b", report_id=report_id)
    r = _post_raw(client, other.model_dump_json())
    assert r.status_code == 409 and "different body" in r.text
    with make_engine(settings).connect() as conn:
        assert conn.scalar(select(func.count()).select_from(Host)) == 1


@pytest.mark.parametrize("query", [
    "since=2026-12-01T00:00:00",  # no zone
    "since=0001-01-01T00:00:00Z",
    "until=0001-01-01T00:30:00%2B01:00",
])
def test_series_times_must_be_zoned_and_sane(query: str, client: TestClient) -> None:
    assert _post_raw(client, sweep(n=2).model_dump_json()).status_code == 201
    for path in ("/api/v1/hosts/node-a/series?src=0&dst=1&", "/api/v1/hosts/node-a/links/series?"):
        assert client.get(path).status_code == 200, path
        r = client.get(f"{path}{query}")
        assert r.status_code == 422 and ("time zone" in r.text or "year 1" in r.text), r.text


@pytest.mark.parametrize("method,path", [
    ("GET", "/api/v1/alerts/99999999999999999999"),
    ("POST", "/api/v1/alerts/99999999999999999999/ack"),
    ("DELETE", "/api/v1/silences/99999999999999999999"),
    ("DELETE", "/api/v1/maintenance/99999999999999999999"),
    ("DELETE", "/api/v1/maintenance/0"),
])
def test_huge_path_ids_are_a_422(method: str, path: str, client: TestClient) -> None:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    r = client.request(method, path, headers=headers, json={"by": "alice"})
    assert r.status_code == 422 and ("less than or equal" in r.text or
                                     "greater than or equal" in r.text), r.text


@pytest.mark.parametrize("field,value", [("starts_at", "0001-01-01T00:00:00Z"),
                                         ("ends_at", "0001-01-01T00:30:00+01:00")])
def test_year_one_silence_is_a_422(field: str, value: str, client: TestClient) -> None:
    body: dict[str, Any] = {"matchers": [{"name": "host", "value": "x"}], "created_by": "a",
                            field: value}
    if field == "starts_at":
        body["duration_s"] = 60
    r = client.post("/api/v1/silences", json=body,
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.status_code == 422 and "year 1" in r.text


def test_static_nul_is_a_404(client: TestClient) -> None:
    assert client.get("/static/%00").status_code == 404
    assert client.get("/static/a%00b.js").status_code == 404


def test_api_answers_carry_nosniff_and_frame_protection(client: TestClient) -> None:
    for path in ("/api/v1/hosts", "/healthz", "/docs", "/openapi.json", "/nowhere"):
        r = client.get(path)
        assert r.headers["x-content-type-options"] == "nosniff", path
        assert r.headers["x-frame-options"] == "DENY", path


def test_docs_load_from_this_server(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    assert "cdn" not in page.text.lower() and "/docs/assets/swagger-ui-bundle.js" in page.text
    js = client.get("/docs/assets/swagger-ui-bundle.js")
    assert js.status_code == 200 and "SwaggerUIBundle" in js.text
    assert client.get("/docs/assets/swagger-ui.css").status_code == 200
    assert "SwaggerUIBundle" in client.get("/docs/assets/swagger-init.js").text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "<script>" not in page.text  # no inline script: the CSP would block it
    assert client.get("/docs/assets/..%2Fsecret").status_code == 404


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_unreachable_database_is_a_503_with_retry_after(backend: str, tmp_path: Any) -> None:
    from tests.app.conftest import PROBE_TOKEN
    from tests.probes.live_server import free_port

    url = (f"sqlite:///{tmp_path}" if backend == "sqlite"  # a directory: cannot be opened
           else f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/none")
    app = create_app(Settings(database_url=url, probe_tokens=[PROBE_TOKEN]))
    client = JudgedClient(app)  # no lifespan: nothing runs before the request
    for r in (client.get("/api/v1/hosts"), _post_raw(client, sweep(n=2).model_dump_json())):
        assert r.status_code == 503, r.text
        assert r.headers["retry-after"].isdigit() and "retry" in r.json()["detail"]
