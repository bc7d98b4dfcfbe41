"""Reports posted gzip-compressed (`Content-Encoding: gzip`, app/api/json_body.py), on SQLite and
PostgreSQL: stored as the same report as its plain bytes (the same digest, so a plain retry
is a duplicate), inflated no further than the body limit (413), refused 400 when the gzip is
not whole, 415 for a coding the server does not read; every answer of the route, refusals
too, says `Accept-Encoding: gzip` (RFC 7694), which is what makes a probe compress."""

from __future__ import annotations

import gzip
import uuid
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select

from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.history import ReportRow
from peerwatch.probes.agent.sender import WIRE_HEADER, Outcome, Sender
from peerwatch.probes.report import wire_fingerprint
from tests.app.conftest import PROBE_TOKEN, probe_headers
from tests.app.factory import sweep

URL = "/api/v1/reports"


def _post(client: TestClient, body: bytes, encoding: str | None = "gzip") -> Any:
    headers = {**probe_headers(), "Content-Type": "application/json",
               WIRE_HEADER: wire_fingerprint()}
    if encoding:
        headers["Content-Encoding"] = encoding
    return client.post(URL, content=body, headers=headers)


def _digests(settings: Settings) -> dict[str, str | None]:
    engine = make_engine(settings)
    try:
        with engine.connect() as conn:
            return {str(r): d for r, d in conn.execute(
                select(ReportRow.report_id, ReportRow.digest))}
    finally:
        engine.dispose()


def test_a_gzip_report_is_stored_as_its_plain_bytes(client: TestClient,
                                                    settings: Settings) -> None:
    report = sweep(n=2, report_id=uuid.uuid4())
    plain = report.model_dump_json().encode()
    first = _post(client, gzip.compress(plain, 1))
    assert first.status_code == 201, first.text
    assert first.headers["accept-encoding"] == "gzip"
    again = _post(client, plain, encoding=None)  # its retry, plain: the same report
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert again.json()["report_id"] == first.json()["report_id"]
    other = sweep(n=2, report_id=uuid.uuid4())
    assert _post(client, other.model_dump_json().encode(), "identity").status_code == 201
    digests = _digests(settings)
    assert set(digests) == {str(report.report_id), str(other.report_id)}
    assert digests[str(report.report_id)] is not None


def test_a_body_that_inflates_past_the_limit_is_413(client: TestClient,
                                                    settings: Settings) -> None:
    bomb = gzip.compress(b" " * (settings.max_body_bytes + 1), 9)
    assert len(bomb) < settings.max_body_bytes // 100  # small on the wire
    answer = _post(client, bomb)
    assert answer.status_code == 413, answer.text
    assert "inflates past" in answer.json()["detail"]
    assert answer.headers["accept-encoding"] == "gzip"
    assert _digests(settings) == {}


def test_broken_gzip_is_400_and_an_unknown_coding_415(client: TestClient,
                                                      settings: Settings) -> None:
    whole = gzip.compress(sweep(n=2).model_dump_json().encode())
    for broken in (whole[:-8], whole + b"x", b"{not gzip}"):
        answer = _post(client, broken)
        assert answer.status_code == 400, answer.text
        assert "not whole gzip" in answer.json()["detail"]
    answer = _post(client, b"{}", encoding="br")
    assert answer.status_code == 415 and answer.headers["accept-encoding"] == "gzip"
    assert "'br'" in answer.json()["detail"]
    assert _digests(settings) == {}


def test_other_routes_do_not_say_they_read_gzip(client: TestClient) -> None:
    assert "accept-encoding" not in client.get("/healthz").headers


def test_the_probe_sends_its_second_report_compressed_and_both_are_stored(
        client: TestClient, settings: Settings) -> None:
    """The agent's own Sender against this server: the first report plain (nothing said
    yet), the second gzip (the first answer said so), both stored."""
    seen: list[str | None] = []
    transport = client._transport  # the app, in this process
    real = transport.handle_request

    def noting(request: Any) -> Any:
        seen.append(request.headers.get("content-encoding"))
        return real(request)

    transport.handle_request = noting  # type: ignore[method-assign]
    sender = Sender("http://testserver", PROBE_TOKEN, 30.0, transport=transport)
    reports = [sweep(n=2, report_id=uuid.uuid4()) for _ in range(2)]
    try:
        assert [sender.send(r).outcome for r in reports] == [Outcome.DELIVERED] * 2
    finally:
        sender.close()
    assert seen == [None, "gzip"]
    assert set(_digests(settings)) == {str(r.report_id) for r in reports}
