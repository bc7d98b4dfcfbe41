"""Attribution through the HTTP API on SQLite and PostgreSQL: an explained pair
says so. `/hosts/{host}/health` pairs and `/hosts/{host}/matrix` cells carry `explained_by`
(the GPU whose fault explains the pair: that GPU's alert is the page) and `cause` (why, in
short words), and `waits_for` where the pair's own page waits for a GPU pattern
(tests/app/alerting/test_pattern_forming.py); test_openapi_contract.py holds their schema.
Reports built here (tests/app/factory.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient

from peerwatch.probes.report import Report
from tests.app.alerting.test_attribution import ERROR, N, _fabric
from tests.app.conftest import probe_headers
from tests.app.factory import T0, sweep


def _post(client: TestClient, report: Report) -> None:
    r = client.post("/api/v1/reports", content=report.model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text


def _pairs(client: TestClient) -> dict[tuple[int, int], dict[str, Any]]:
    body = client.get("/api/v1/hosts/node-a/health").json()
    return {(p["src"], p["dst"]): p for p in body["pairs"]}


def _cells(client: TestClient) -> dict[tuple[int, int], dict[str, Any]]:
    body = client.get("/api/v1/hosts/node-a/matrix", params={"test": "ce_write"}).json()
    return {(c["src"], c["dst"]): c for c in body["cells"]}


def test_the_pairs_of_a_gpu_failing_with_every_peer_name_it(client: TestClient) -> None:
    failing = {(s, d): ERROR for s in range(N) for d in range(N) if s != d and 3 in (s, d)}
    _post(client, sweep(n=N, at=T0))
    for i in (1, 2):
        _post(client, sweep(n=N, at=T0 + timedelta(seconds=600 * i), errors=failing))
    for answer in (_pairs(client), _cells(client)):
        assert len(answer) == N * (N - 1)
        for (s, d), p in answer.items():
            if 3 in (s, d):
                assert p["verdict"] == "down" and p["explained_by"] == 3, p
                assert p["cause"] == "GPU3, whose copies fail with every peer", p
            else:
                assert (p["verdict"], p["explained_by"], p["cause"]) == ("healthy", None, None)
            assert p["waits_for"] is None  # the pattern is established: nothing waits


def test_the_pairs_through_a_fabric_in_progress_say_not_trusted(client: TestClient) -> None:
    _post(client, sweep(n=N, at=T0))
    _post(client, _fabric(sweep(n=N, at=T0 + timedelta(seconds=100)), 6, "in_progress"))
    for answer in (_pairs(client), _cells(client)):
        through = {k: p for k, p in answer.items() if 6 in k}
        assert len(through) == 14
        for p in through.values():
            assert p["verdict"] == "degraded" and p["explained_by"] == 6, p
            assert p["cause"] == "GPU6 fabric in progress" and "not trusted" in p["reason"], p
        assert {p["explained_by"] for k, p in answer.items() if 6 not in k} == {None}

