"""Bounds on silences, on SQLite and PostgreSQL alike: at most 32
matchers of bounded length, no NUL anywhere (it was 201 on PostgreSQL in a matcher value,
422 elsewhere), and regexes whose matching cost is linear (RE2): a pattern that makes
Python's backtracking engine take exponential time is refused or matched at once."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fastapi.testclient import TestClient

from peerwatch.app.analysis.matchers import matcher_matches
from peerwatch.app.schemas.alerts import MAX_MATCHER_VALUE, MAX_MATCHERS
from tests.app.conftest import ADMIN_TOKEN

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def _silence(matchers: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"matchers": matchers, "created_by": "alice", "duration_s": 600, **extra}


def _post(client: TestClient, body: dict[str, Any]) -> Any:
    return client.post("/api/v1/silences", json=body, headers=ADMIN)


def _stored(client: TestClient) -> int:
    return len(client.get("/api/v1/silences").json()["silences"])


def test_too_many_matchers_are_refused(client: TestClient) -> None:
    many = [{"name": f"l{i}", "value": "x"} for i in range(MAX_MATCHERS + 1)]
    r = _post(client, _silence(many))
    assert r.status_code == 422 and f"at most {MAX_MATCHERS}" in r.text, r.text
    r = _post(client, _silence([{"name": f"l{i}", "value": "x"} for i in range(10_000)]))
    assert r.status_code == 413  # past the admin API's body limit: never validated
    assert _post(client, _silence(many[:MAX_MATCHERS])).status_code == 201
    assert _stored(client) == 1


def test_a_matcher_value_is_bounded(client: TestClient) -> None:
    r = _post(client, _silence([{"name": "host", "value": "a" * (MAX_MATCHER_VALUE + 1)}]))
    assert r.status_code == 422 and _stored(client) == 0


@pytest.mark.parametrize("where", ["value", "name", "created_by", "comment"])
def test_nul_is_refused_everywhere(where: str, client: TestClient) -> None:
    matcher = {"name": "host", "value": "a"}
    body = _silence([matcher])
    if where in matcher:
        matcher[where] = "a\x00b"
    else:
        body[where] = "a\x00b"
    r = _post(client, body)
    assert r.status_code == 422 and "NUL" in r.text, r.text
    assert _stored(client) == 0


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?=a)a", "(a{1000}){1000}"])
def test_regexes_re2_cannot_run_in_linear_time_are_refused(pattern: str,
                                                           client: TestClient) -> None:
    r = _post(client, _silence([{"name": "alertname", "value": pattern, "is_regex": True}]))
    assert r.status_code == 422 and "not a valid regex (RE2" in r.text, r.text
    assert _stored(client) == 0


def test_a_catastrophic_pattern_matches_at_once() -> None:
    """`(a+)+$` against 'aaaa...b' takes exponential time in Python's `re` (30 characters
    already take minutes); RE2 answers at once. The match runs in a thread with a generous
    limit, so a regression fails the test rather than hanging the suite."""
    matcher = {"name": "alertname", "value": "(a+)+$", "is_regex": True, "is_equal": True}
    labels = {"alertname": "a" * 200 + "b"}
    answers: list[bool] = []
    worker = threading.Thread(target=lambda: answers.append(matcher_matches(matcher, labels)),
                              daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert answers == [False]


def test_the_catastrophic_pattern_is_stored_and_matches(client: TestClient) -> None:
    r = _post(client, _silence([{"name": "alertname", "value": "(N+)+V", "is_regex": True}]))
    assert r.status_code == 201, r.text
    assert client.get("/api/v1/alerts").status_code == 200


def test_host_regex_ignores_case() -> None:
    matcher = {"name": "host", "value": "GPU-NODE-.*", "is_regex": True, "is_equal": True}
    assert matcher_matches(matcher, {"host": "gpu-node-17"})
