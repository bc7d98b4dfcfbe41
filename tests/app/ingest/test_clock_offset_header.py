"""The server takes the probe's own measured clock offset before its own reading, which a
request's transit (a slow server's delay) inflates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy import select

from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.agent.clock_offset import OFFSET_HEADER
from peerwatch.probes.agent.sender import SENT_AT_HEADER
from tests.app.conftest import probe_headers
from tests.app.factory import sweep


def _post(client: TestClient, headers: dict[str, str]) -> float | None:
    now = datetime.now(UTC)
    r = client.post("/api/v1/reports", content=sweep(at=now).model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json", **headers})
    assert r.status_code == 201, r.text
    with client.app.state.sessionmaker() as session:  # type: ignore[attr-defined]
        return session.scalar(select(Host.clock_skew_s).where(Host.name == "node-a"))


def test_the_probes_measured_offset_wins_over_a_late_arrival(client: TestClient) -> None:
    late = (datetime.now(UTC) - timedelta(seconds=200)).isoformat()  # 200 s in transit
    skew = _post(client, {SENT_AT_HEADER: late, OFFSET_HEADER: "2.500"})
    assert skew is not None and abs(skew - 2.5) < 0.01


def test_without_a_sane_offset_the_send_time_is_read(client: TestClient) -> None:
    late = (datetime.now(UTC) - timedelta(seconds=200)).isoformat()
    skew = _post(client, {SENT_AT_HEADER: late, OFFSET_HEADER: "soon"})
    assert skew is not None and 199 < skew < 260
