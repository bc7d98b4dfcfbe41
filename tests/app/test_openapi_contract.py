"""The OpenAPI document is a contract, on SQLite and PostgreSQL: every
answer a route gives is documented for it with its body's shape, the same error gets the
same status on every route, `Allow` names every method a path serves, and the cross-field
rule of silences and maintenance windows is in the schema."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.app.conftest import ADMIN_TOKEN, probe_headers
from tests.app.factory import sweep

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def _doc(client: TestClient) -> dict[str, Any]:
    doc: dict[str, Any] = client.get("/openapi.json").json()
    return doc


def _documented(doc: dict[str, Any], method: str, path: str, status: int) -> dict[str, Any]:
    answers = doc["paths"][path][method.lower()]["responses"]
    assert str(status) in answers, (method, path, status, sorted(answers))
    answer: dict[str, Any] = answers[str(status)]
    assert "application/json" in answer.get("content", {}) or status < 300, answer
    return answer


@pytest.mark.parametrize("method,url,path,status,headers", [
    ("POST", "/api/v1/maintenance", "/api/v1/maintenance", 401, {}),
    ("POST", "/api/v1/silences", "/api/v1/silences", 403, {"Authorization": "Bearer nope"}),
    ("DELETE", "/api/v1/silences/5", "/api/v1/silences/{silence_id}", 404, ADMIN),
    ("DELETE", "/api/v1/maintenance/5", "/api/v1/maintenance/{window_id}", 404, ADMIN),
    ("POST", "/api/v1/alerts/5/ack", "/api/v1/alerts/{alert_id}/ack", 404, ADMIN),
    ("GET", "/api/v1/hosts/nobody", "/api/v1/hosts/{host}", 404, {}),
    ("GET", "/api/v1/hosts/nobody/health", "/api/v1/hosts/{host}/health", 404, {}),
    ("GET", "/api/v1/alerts/5", "/api/v1/alerts/{alert_id}", 404, {}),
])
def test_each_answer_is_documented_with_its_body(method: str, url: str, path: str,
                                                 status: int, headers: dict[str, str],
                                                 client: TestClient) -> None:
    body = {"by": "a"} if url.endswith("/ack") else None
    r = client.request(method, url, headers=headers, json=body)
    assert r.status_code == status, r.text
    _documented(_doc(client), method, path, status)
    assert isinstance(r.json()["detail"], str)


def test_a_range_ending_before_it_starts_is_the_documented_422(client: TestClient) -> None:
    r = client.post("/api/v1/reports", content=sweep(n=2).model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201
    for url in ("/api/v1/hosts/node-a/links/series", "/api/v1/hosts/node-a/series?src=0&dst=1"):
        sep = "&" if "?" in url else "?"
        r = client.get(f"{url}{sep}since=2026-12-02T00:00:00Z&until=2026-12-01T00:00:00Z")
        assert r.status_code == 422, r.text
        [error] = r.json()["detail"]
        assert error["loc"][0] == "query" and error["type"] == "value_error", error
        assert isinstance(error["msg"], str) and error["msg"]


@pytest.mark.parametrize("path,allowed", [
    ("/api/v1/maintenance", "GET, POST"), ("/api/v1/silences", "GET, POST"),
    ("/api/v1/hosts", "GET"), ("/api/v1/reports", "POST"),
    ("/api/v1/maintenance/3", "DELETE"),
])
def test_allow_names_every_method_a_path_serves(path: str, allowed: str,
                                                client: TestClient) -> None:
    for method in ("OPTIONS", "PUT", "PATCH"):
        r = client.request(method, path)
        assert r.status_code == 405 and r.headers["allow"] == allowed, (method, r.headers)
        assert allowed in r.json()["detail"]


@pytest.mark.parametrize("path,extra", [("/api/v1/maintenance", {"host": "node-a"}),
                                        ("/api/v1/silences", {
                                            "matchers": [{"name": "host", "value": "a"}],
                                            "created_by": "a"})])
def test_exactly_one_end_is_in_the_schema_and_enforced(path: str, extra: dict[str, Any],
                                                       client: TestClient) -> None:
    doc = _doc(client)
    ref = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    schema = doc["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]
    assert schema["oneOf"] == [{"required": ["ends_at"]}, {"required": ["duration_s"]}]
    both = {**extra, "duration_s": 60, "ends_at": "2099-01-01T00:00:00Z"}
    assert client.post(path, json=both, headers=ADMIN).status_code == 422
    assert client.post(path, json=extra, headers=ADMIN).status_code == 422
    assert client.post(path, json={**extra, "duration_s": 60}, headers=ADMIN).status_code == 201


def test_every_error_answer_has_a_body_schema(client: TestClient) -> None:
    doc = _doc(client)
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            answers = operation["responses"]
            if operation.get("security"):
                assert {"401", "403"} <= set(answers), (method, path)
            if "{" in path:
                assert "404" in answers, (method, path)
            for code, answer in answers.items():
                if code[0] in "45":
                    assert "application/json" in answer["content"], (method, path, code)


def test_pairs_and_matrix_cells_document_what_explains_them(client: TestClient) -> None:
    """`/health` pairs and matrix cells say which GPU explains them, why, and
    whether their own page waits for a GPU pattern (tests/app/test_explained_api.py)."""
    schemas = _doc(client)["components"]["schemas"]
    for name in ("PairHealth", "MatrixCell"):
        props = schemas[name]["properties"]
        for field in ("explained_by", "cause", "waits_for"):
            assert field in props and props[field].get("description"), (name, field)
            assert field not in schemas[name].get("required", []), (name, field)
