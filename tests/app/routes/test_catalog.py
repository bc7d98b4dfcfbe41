"""The test catalogue: GET /api/v1/tests lists every TestName with its scope, unit and words,
and the dashboard's page carries the same list (so the browser keeps no list of its own)."""

from __future__ import annotations

import json
import re
from html import unescape

from fastapi import FastAPI
from fastapi.testclient import TestClient

from peerwatch.app.routes import catalog, frontend
from peerwatch.probes.report import (
    GPU_TESTS,
    JOINT_TESTS,
    NIC_TESTS,
    PAIR_TESTS,
    TEST_ABOUT,
    TestName,
)
from tests.app.judged_client import JudgedClient


def _client() -> TestClient:
    app = FastAPI()
    app.include_router(catalog.router)
    app.include_router(frontend.router)
    return JudgedClient(app)


def test_every_test_is_listed_with_its_scope_unit_and_words() -> None:
    tests = _client().get("/api/v1/tests").json()["tests"]
    by_name = {t["name"]: t for t in tests}
    assert set(by_name) == {t.value for t in TestName}
    assert {n for n, t in by_name.items() if t["scope"] == "pair"} == {t.value for t in PAIR_TESTS}
    assert {n for n, t in by_name.items() if t["scope"] == "gpu"} == {
        t.value for t in (*GPU_TESTS, *NIC_TESTS, *JOINT_TESTS)}
    assert by_name["allreduce"]["scope"] == "set"
    assert by_name["latency"]["unit"] == "s" and by_name["h2d"]["unit"] == "B/s"
    assert all(t["about"] == TEST_ABOUT[TestName(t["name"])] for t in tests)


def test_the_page_carries_the_same_catalogue_in_a_meta_tag() -> None:
    client = _client()
    html = client.get("/").text
    assert frontend.TESTS_PLACEHOLDER not in html
    content = re.search(r'<meta name="peerwatch-tests" content="([^"]*)">', html)
    assert content is not None
    assert json.loads(unescape(content.group(1))) == client.get("/api/v1/tests").json()["tests"]
