"""A host whose probe clock is off says so in the hosts list and its record from its first
report (`clock_note`), where the ProbeClockSkew alert waits 10 min: the dashboard shows it
"not trusted yet" instead of a healthy row with 0 alerts (issue 40)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from peerwatch.app.analysis.clock import clock_note
from peerwatch.probes.agent.sender import SENT_AT_HEADER
from tests.app.conftest import probe_headers
from tests.app.factory import sweep


def _post(client: TestClient, behind_s: float) -> None:
    probe_now = datetime.now(UTC) - timedelta(seconds=behind_s)
    r = client.post("/api/v1/reports", content=sweep(at=probe_now).model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json",
                             SENT_AT_HEADER: probe_now.isoformat()})
    assert r.status_code == 201, r.text


def test_a_clock_3_min_behind_is_said_in_the_list_and_the_record(client: TestClient) -> None:
    _post(client, 180)
    [row] = [h for h in client.get("/api/v1/hosts").json()["hosts"] if h["host"] == "node-a"]
    assert 179 < row["clock_skew_s"] < 240
    assert row["clock_note"].startswith("probe clock 3 min behind the server's (+18"), row
    assert "not trusted" in row["clock_note"]
    assert client.get("/api/v1/hosts/node-a").json()["clock_note"] == row["clock_note"]


def test_a_clock_within_the_limit_says_nothing(client: TestClient) -> None:
    _post(client, 0)
    [row] = [h for h in client.get("/api/v1/hosts").json()["hosts"] if h["host"] == "node-a"]
    assert row["clock_note"] is None
    assert client.get("/api/v1/hosts/node-a").json()["clock_note"] is None


def test_the_note_names_the_way_and_keeps_the_limit() -> None:
    assert clock_note(None, 60) is None and clock_note(59.0, 60) is None
    assert clock_note(-300.0, 60).startswith("probe clock 5 min ahead of the server's (-300 s)")  # type: ignore[union-attr]
