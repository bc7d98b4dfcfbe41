"""Every operation that takes a JSON body refuses the same bad bytes the same way:
non-finite literals, invalid UTF-8, NUL and lone surrogates are a 422 of type
`json_invalid` on every route (they were a 500 on maintenance, silences and acks: the 422
tried to echo NaN), and numbers sent as strings are refused rather than converted.

The operations are read from the OpenAPI document, so a new body-taking route is covered
without editing this file."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from peerwatch.app.api.errors import json_safe
from peerwatch.probes.heartbeat import HEARTBEAT_MAX_BYTES
from tests.app.conftest import ADMIN_TOKEN, PROBE_TOKEN
from tests.app.factory import sweep

BAD_BODIES: dict[str, bytes] = {
    "NaN": b'{"by": NaN, "host": NaN}',
    "Infinity": b'{"duration_s": Infinity, "by": "a"}',
    "-Infinity": b'{"duration_s": -Infinity, "by": "a"}',
    "1e400": b'{"duration_s": 1e400, "by": "a"}',
    "invalid UTF-8": b'{"by": "\xff\xfe", "host": "\xc3"}',
    "NUL escape": b'{"by": "a\\u0000b", "host": "a\\u0000"}',
    "NUL in a key": b'{"a\\u0000": 1}',
    "lone surrogate": b'{"by": "\\ud800", "host": "\\udfff"}',
    "not JSON": b'{"by": ',
}


def body_operations(client: TestClient) -> list[tuple[str, str]]:
    """(method, path) of every operation in the OpenAPI document that takes a body, with
    each path parameter filled in as 1."""
    found = []
    for path, item in client.get("/openapi.json").json()["paths"].items():
        for method, operation in item.items():
            if "requestBody" in operation:
                found.append((method.upper(), re.sub(r"\{[^}]+\}", "1", path)))
    return found


def _headers(path: str) -> dict[str, str]:
    # a host's credential
    probe = ("/reports", "/snapshots", "/ranks", "/rendezvous", "/network/results",
             "/heartbeats")
    token = PROBE_TOKEN if path.endswith(probe) else ADMIN_TOKEN
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


def test_every_body_operation_is_covered(client: TestClient) -> None:
    operations = {path for _method, path in body_operations(client)}
    assert {"/api/v1/reports", "/api/v1/snapshots", "/api/v1/maintenance",
            "/api/v1/silences", "/api/v1/alerts/1/ack"} <= operations


@pytest.mark.parametrize("case", list(BAD_BODIES))
def test_bad_bytes_are_one_422_on_every_route(case: str, client: TestClient) -> None:
    for method, path in body_operations(client):
        r = client.request(method, path, content=BAD_BODIES[case], headers=_headers(path))
        assert r.status_code == 422, (method, path, r.status_code, r.text)
        detail = r.json()["detail"]
        assert detail[0]["type"] == "json_invalid", (path, detail)
        assert detail[0]["loc"][0] == "body", (path, detail)
        assert detail[0]["msg"].startswith("body is not valid JSON"), (path, detail)


def test_the_reason_is_named(client: TestClient) -> None:
    reasons = {"NaN": "NaN is not a finite JSON number", "invalid UTF-8": "not UTF-8",
               "NUL escape": "NUL", "lone surrogate": "lone surrogate",
               "1e400": "1e400 is not a finite"}
    for case, words in reasons.items():
        r = client.post("/api/v1/silences", content=BAD_BODIES[case],
                        headers=_headers("/api/v1/silences"))
        assert words in r.json()["detail"][0]["msg"], (case, r.text)


def test_a_finite_body_still_works(client: TestClient) -> None:
    r = client.post("/api/v1/maintenance", headers=_headers("/api/v1/maintenance"),
                    json={"host": "node-a", "duration_s": 60})
    assert r.status_code == 201, r.text


def _report() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(sweep(n=2).model_dump_json())
    return data


@pytest.mark.parametrize("field,value", [
    ("results.0.value", "1e9"), ("results.0.copies", "10"), ("results.0.verified", "true"),
    ("results.0.copies", 10.5), ("inventory.gpus.0.memory_total_bytes", "80000000000"),
])
def test_report_numbers_sent_as_strings_are_refused(field: str, value: Any,
                                                    client: TestClient) -> None:
    data = _report()
    *parents, last = [int(p) if p.isdigit() else p for p in field.split(".")]
    node: Any = data
    for key in parents:
        node = node[key]
    node[last] = value
    r = client.post("/api/v1/reports", content=json.dumps(data),
                    headers=_headers("/api/v1/reports"))
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"] == ["body", *parents, last]


@pytest.mark.parametrize("body", [
    {"host": "node-a", "duration_s": "3600"},
    {"matchers": [{"name": "host", "value": "a", "is_regex": "true"}], "created_by": "a",
     "duration_s": 60},
    {"matchers": [{"name": "host", "value": "a", "is_equal": 1}], "created_by": "a",
     "duration_s": 60},
])
def test_admin_numbers_and_flags_sent_as_strings_are_refused(body: dict[str, Any],
                                                             client: TestClient) -> None:
    path = "/api/v1/maintenance" if "host" in body else "/api/v1/silences"
    r = client.post(path, json=body, headers=_headers(path))
    assert r.status_code == 422, r.text


def test_the_error_echo_always_encodes() -> None:
    echo = json_safe({"input": [float("nan"), float("-inf"), "\ud800", b"\xff", {1: object}]})
    json.dumps(echo, allow_nan=False).encode("utf-8")  # raises if anything slipped through


def test_a_non_finite_value_names_its_field(client: TestClient) -> None:
    body = b'{"host": "node-a", "duration_s": -Infinity}'
    r = client.post("/api/v1/maintenance", content=body, headers=_headers("/api/v1/maintenance"))
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "duration_s"]


def test_admin_bodies_are_bounded_before_validation(client: TestClient) -> None:
    from peerwatch.app.api.json_body import ADMIN_BODY_LIMIT

    many = {"matchers": [{"name": f"l{i}", "value": "x"} for i in range(10_000)],
            "created_by": "a", "duration_s": 60}
    body = json.dumps(many).encode()
    assert len(body) > ADMIN_BODY_LIMIT
    for path in ("/api/v1/silences", "/api/v1/maintenance", "/api/v1/alerts/1/ack"):
        r = client.post(path, content=body, headers=_headers(path))
        assert r.status_code == 413 and "the admin API's limit" in r.text, (path, r.text)
    assert client.get("/api/v1/silences").json()["silences"] == []


# Bodies that were a 500 with a traceback in the log (Python's 4300-digit limit on int(), a
# RecursionError in the 422's own echo): (body, words the 422 must hold on every route).
HOSTILE_BODIES: dict[str, tuple[bytes, str]] = {
    "5000-digit integer in a field": (b'{"by": ' + b"9" * 5000 + b', "host": "a"}',
                                      "an integer of 5000 digits is too large"),
    "5000-digit integer alone": (b"-" + b"9" * 5000, "an integer of 5000 digits"),
    "5000-digit integer deep in a list": (
        b'{"results": [{"value": ' + b"7" * 5000 + b'}]}', "5000 digits"),
    "object nested 900 deep": (b'{"a":' * 900 + b"1" + b"}" * 900, "nests JSON too deeply"),
    "list nested 1000 deep with a long integer": (
        b"[" * 1000 + b"1" * 25 + b"]" * 1000, ""),
    "object nested 20 deep": (b'{"by":' * 20 + b"1" + b"}" * 20, ""),
    "NaN": (b'{"by": NaN}', "NaN is not a finite JSON number"),
    "invalid UTF-8": (b'{"by": "\xff"}', "not UTF-8"),
}


@pytest.mark.parametrize("case", list(HOSTILE_BODIES))
def test_hostile_bodies_are_a_4xx_naming_why_on_every_route(
        case: str, client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    body, words = HOSTILE_BODIES[case]
    with caplog.at_level(logging.INFO):
        for method, path in body_operations(client):
            r = client.request(method, path, content=body, headers=_headers(path))
            if path.endswith("/heartbeats") and len(body) > HEARTBEAT_MAX_BYTES:
                # a heartbeat is small by contract: a bigger body is refused unread, by size
                assert r.status_code == 413 and "HEARTBEAT_MAX_BYTES" in r.text, (case, r.text)
                continue
            assert r.status_code == 422, (case, path, r.status_code, r.text[:300])
            assert words in r.text, (case, path, r.text[:300])
            assert len(r.content) < 4096, (case, path, "the 422 echoes the body back")
    noisy = [rec for rec in caplog.records if rec.exc_info or rec.levelno >= logging.ERROR]
    assert not noisy, [rec.getMessage()[:200] for rec in noisy]


def test_a_long_integer_within_reach_is_named_by_its_field(client: TestClient) -> None:
    data = _report()
    data["inventory"]["gpus"][0]["memory_total_bytes"] = int("9" * 4000)
    r = client.post("/api/v1/reports", content=json.dumps(data),
                    headers=_headers("/api/v1/reports"))
    assert r.status_code == 422, r.text[:300]
    error = r.json()["detail"][0]
    assert error["loc"] == ["body", "inventory", "gpus", 0, "memory_total_bytes"]
    assert "(4000 digits) does not fit in 64 bits" in error["msg"]
