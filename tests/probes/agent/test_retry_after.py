"""A real HTTP server that is overloaded: 429 with Retry-After, then 201. The probe's outbox
spools the report, does not try again before the Retry-After (plus its jitter), then
delivers it once."""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from peerwatch.probes.agent.outbox import Delivery, Outbox
from peerwatch.probes.agent.sender import RETRY_AFTER_JITTER, Backoff, Sender
from peerwatch.probes.agent.spool import Spool
from tests.probes.fakeclock import FakeClock
from tests.probes.sample_reports import sample_report
from tests.threaded_server import running

RETRY_AFTER_S = 7


class Busy(BaseHTTPRequestHandler):
    """429 + Retry-After to the first `busy` posts, then 201; remembers each report body."""

    busy = 1
    bodies: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).bodies.append(body)
        if len(type(self).bodies) <= type(self).busy:
            self._answer(429, b'{"detail": "ingest saturated"}',
                         {"Retry-After": str(RETRY_AFTER_S)})
        else:
            self._answer(201, b'{"duplicate": false}', {})

    def _answer(self, code: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(code)
        for name, value in {**headers, "Content-Type": "application/json"}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def busy_server() -> Iterator[str]:
    Busy.bodies = []
    with running(ThreadingHTTPServer(("127.0.0.1", 0), Busy)) as url:
        yield url


def test_retry_after_is_honoured_then_the_report_is_delivered_once(
        busy_server: str, tmp_path: Path) -> None:
    clock = FakeClock()
    outbox = Outbox(Sender(busy_server, "tok", 5.0), Spool(tmp_path, 1 << 20),
                    Backoff(1.0, 300.0, random.Random(3)), clock)
    report = sample_report()
    first = outbox.submit(report)
    assert first.delivery is Delivery.SPOOLED and first.answer is not None
    assert (first.answer.status, first.answer.retry_after_s) == (429, RETRY_AFTER_S)
    due = outbox.replay_due_at()
    assert due is not None
    assert clock() + RETRY_AFTER_S <= due <= clock() + RETRY_AFTER_S * (1 + RETRY_AFTER_JITTER)
    clock.advance(RETRY_AFTER_S - 0.5)
    assert not outbox.ready() and outbox.replay() == 0  # nothing sent before Retry-After
    assert len(Busy.bodies) == 1
    clock.advance(due - clock())
    assert outbox.replay() == 1 and len(outbox.spool) == 0
    assert len(Busy.bodies) == 2 and Busy.bodies[1] == report.model_dump_json().encode()
    outbox.close()


def test_repeated_refusals_log_the_first_at_once_and_then_one_count(
        busy_server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Five 429s in a row, then the server takes the report: one full line at the first
    refusal, and when the server answers again one line counting the four after it."""
    Busy.busy = 5
    clock = FakeClock()
    outbox = Outbox(Sender(busy_server, "tok", 5.0), Spool(tmp_path, 1 << 20),
                    Backoff(1.0, 300.0, random.Random(3)), clock)
    try:
        with caplog.at_level(logging.INFO, "peerwatch.probes.agent.outbox"):
            outbox.submit(sample_report())
            while len(outbox.spool):
                due = outbox.replay_due_at()
                assert due is not None
                clock.advance(max(0.0, due - clock()))
                outbox.replay()
    finally:
        Busy.busy = 1
        outbox.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "peerwatch.probes.agent.outbox"]
    assert len(Busy.bodies) == 6
    assert lines[0].startswith("server unavailable (HTTP 429"), lines
    assert re.fullmatch(r"server busy \(HTTP 429\) x4 in the last \d+ s; latest: server "
                        r"unavailable \(HTTP 429.*", lines[1]), lines
    assert lines[2].startswith("server answers again") and len(lines) == 4, lines
    assert lines[3].startswith("replayed 1 spooled report"), lines
