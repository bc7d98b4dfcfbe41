"""Every response says how long the app spent on it (`Server-Timing: app;dur=<ms>`)."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from tests.app.conftest import probe_headers
from tests.app.factory import sweep

TIMING = re.compile(r"^app;dur=(\d+\.\d)$")


def test_ingest_and_reads_carry_server_timing(client: TestClient) -> None:
    posted = client.post("/api/v1/reports", content=sweep().model_dump_json(),
                         headers={**probe_headers(), "Content-Type": "application/json"})
    missing = client.get("/api/v1/hosts/nowhere/matrix")
    for r in (posted, missing, client.get("/healthz")):
        match = TIMING.match(r.headers["server-timing"])
        assert match, r.headers
        assert float(match[1]) >= 0
    assert (posted.status_code, missing.status_code) == (201, 404)
