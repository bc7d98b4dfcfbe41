"""A report is known by its content, not by the bytes that carried it, on SQLite and
PostgreSQL (app/ingest/posted.py): a probe upgraded between a send and its spool's retry
writes the same report anew, as other bytes, and the retry is a 200 duplicate with the
stored id, not a 409; a report_id reused for other content is still a 409. A body whose
sender has the server's wire models (`X-Peerwatch-Wire`) is known by its bytes' digest,
nothing serialized again; any other body by the digest of its canonical JSON."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select

from peerwatch.app.ingest.digest import canonical_digest
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.history import ReportRow
from peerwatch.probes.agent.sender import WIRE_HEADER
from peerwatch.probes.report import Report, TestName, wire_fingerprint
from tests.app.conftest import probe_headers
from tests.app.factory import sweep

URL = "/api/v1/reports"
CURRENT = {WIRE_HEADER: wire_fingerprint()}  # what a probe of this release sends


def _post(client: TestClient, body: str, headers: dict[str, str] | None = None) -> Any:
    return client.post(URL, content=body, headers={
        **probe_headers(), "Content-Type": "application/json", **(headers or {})})


def _as_an_older_release_wrote_it(report: Report) -> str:
    """The same report in an older probe's bytes: a field it did not have yet left out (the
    server reads its default), keys in another order, other spacing."""
    data = json.loads(report.model_dump_json())
    assert data.pop("events") == []
    return json.dumps(dict(reversed(list(data.items()))), indent=1)


def _stored(settings: Settings) -> list[tuple[str, str | None]]:
    engine = make_engine(settings)
    try:
        with engine.connect() as conn:
            return [(str(r), d) for r, d in conn.execute(
                select(ReportRow.report_id, ReportRow.digest))]
    finally:
        engine.dispose()


def test_a_retry_after_a_probe_upgrade_is_a_duplicate(client: TestClient,
                                                      settings: Settings) -> None:
    report = sweep(n=2, tests=[TestName.CE_WRITE, TestName.LATENCY], report_id=uuid.uuid4())
    first = _post(client, _as_an_older_release_wrote_it(report))  # no wire header: older
    assert first.status_code == 201, first.text
    upgraded = _post(client, report.model_dump_json(), CURRENT)  # the spool's retry, anew
    assert upgraded.status_code == 200, upgraded.text
    assert upgraded.json()["duplicate"] is True
    assert upgraded.json()["report_id"] == first.json()["report_id"] == str(report.report_id)
    again = _post(client, _as_an_older_release_wrote_it(report))  # the old bytes once more
    assert again.status_code == 200 and again.json()["duplicate"] is True, again.text
    assert _stored(settings) == [(str(report.report_id), canonical_digest(report))]


def test_a_reused_report_id_with_other_content_is_still_a_409(client: TestClient,
                                                               settings: Settings) -> None:
    report = sweep(n=2, report_id=uuid.uuid4())
    assert _post(client, _as_an_older_release_wrote_it(report)).status_code == 201
    other = report.model_copy(update={"finished_at": report.finished_at + timedelta(seconds=1)})
    for body, headers in ((other.model_dump_json(), CURRENT),
                          (_as_an_older_release_wrote_it(other), None)):
        r = _post(client, body, headers)
        assert r.status_code == 409 and "different body" in r.text, r.text
    assert _stored(settings) == [(str(report.report_id), canonical_digest(report))]


def test_a_current_probes_body_is_known_by_its_bytes(client: TestClient,
                                                     settings: Settings) -> None:
    """The fast path: with the server's wire header the bytes' digest is stored as it is,
    the report never serialized again (indented bytes, which no probe sends, show which
    digest was taken), and their retry is known by the same digest."""
    report = sweep(n=2, report_id=uuid.uuid4())
    body = report.model_dump_json(indent=1)
    assert _post(client, body, CURRENT).status_code == 201
    digest = hashlib.sha256(body.encode()).hexdigest()
    assert _stored(settings) == [(str(report.report_id), digest)]
    again = _post(client, body, CURRENT)
    assert again.status_code == 200 and again.json()["duplicate"] is True, again.text


def test_a_current_probes_retry_in_other_bytes_is_a_duplicate(client: TestClient) -> None:
    """The other way round: stored from a current probe's bytes, then sent again as an
    older release writes it (a probe downgraded, a hand-made retry)."""
    report = sweep(n=2, report_id=uuid.uuid4())
    assert _post(client, report.model_dump_json(), CURRENT).status_code == 201
    again = _post(client, _as_an_older_release_wrote_it(report))
    assert again.status_code == 200 and again.json()["duplicate"] is True, again.text


def test_another_wire_header_is_not_taken_for_this_servers(client: TestClient,
                                                           settings: Settings) -> None:
    report = sweep(n=2, report_id=uuid.uuid4())
    body = report.model_dump_json(indent=1)
    assert _post(client, body, {WIRE_HEADER: "0" * 32}).status_code == 201
    assert _stored(settings) == [(str(report.report_id), canonical_digest(report))]
