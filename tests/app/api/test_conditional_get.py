"""ETag / If-None-Match on the read API: a dashboard polling every 15 s gets a
bodiless 304 while an answer is unchanged, and the new answer as soon as it changes."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient

from peerwatch.app.api.conditional_get import etag_of
from tests.app.factory import T0, sweep
from tests.app.test_read_api import post


def test_an_unchanged_answer_is_a_304_and_a_changed_one_is_sent(client: TestClient) -> None:
    post(client, sweep(n=2, at=T0))
    first = client.get("/api/v1/hosts/node-a")
    assert first.status_code == 200, first.text
    tag = first.headers["etag"]
    assert tag.startswith('W/"') and first.headers["cache-control"] == "no-cache"
    again = client.get("/api/v1/hosts/node-a", headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == tag
    post(client, sweep(n=2, at=T0 + timedelta(minutes=10)))  # a new sweep: the answer changes
    changed = client.get("/api/v1/hosts/node-a", headers={"If-None-Match": tag})
    assert changed.status_code == 200 and changed.headers["etag"] != tag
    assert changed.json()["host"] == "node-a"


def test_generated_at_alone_does_not_change_the_tag() -> None:
    a = b'{"generated_at": "2026-12-01T10:00:00Z", "hosts": [1]}'
    b = b'{"generated_at": "2026-12-01T10:00:15Z", "hosts": [1]}'
    assert etag_of(a) == etag_of(b)
    assert etag_of(a) != etag_of(b'{"generated_at": "2026-12-01T10:00:00Z", "hosts": [2]}')


def test_errors_and_writes_get_no_tag(client: TestClient) -> None:
    missing = client.get("/api/v1/hosts/nope/health")
    assert missing.status_code == 404 and "etag" not in missing.headers
    refused = client.post("/api/v1/reports", content=b"{}")
    assert "etag" not in refused.headers
