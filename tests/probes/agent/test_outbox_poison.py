"""One bad report never blocks the others: a report the server fails waits out a
backoff of its own, one it refuses is set aside and counted, the rest are delivered.

The server is the real one on a loopback port. The real server answers no input with a 500
any more, so the "poison" 500 comes from a thin proxy transport in front of it that fails
the chosen report ids and forwards everything else untouched.
"""

from __future__ import annotations

import gzip
import logging
import random
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from peerwatch.probes.agent.outbox import Delivery, Outbox
from peerwatch.probes.agent.sender import Backoff, Sender
from peerwatch.probes.agent.spool import REJECTED_SUFFIX, Spool
from peerwatch.probes.report import Report
from tests.probes.fakeclock import FakeClock
from tests.probes.live_server import TOKEN, free_port, live_server, server_settings, stored
from tests.probes.sample_reports import sample_report


class FailChosen(httpx.BaseTransport):
    """Forwards to the real server, but answers 500 for the report ids in `poison`."""

    def __init__(self) -> None:
        self.poison: set[uuid.UUID] = set()
        self.forward = httpx.HTTPTransport()
        self.seen: list[uuid.UUID] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        if request.headers.get("Content-Encoding") == "gzip":  # once the server said it reads it
            body = gzip.decompress(body)
        report_id = uuid.UUID(Report.model_validate_json(body).report_id.hex)
        self.seen.append(report_id)
        if report_id in self.poison:
            return httpx.Response(500, json={"detail": "poisoned on purpose"})
        return self.forward.handle_request(request)


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Outbox, FailChosen, FakeClock, object]]:
    settings = server_settings(tmp_path / "server")
    port = free_port()
    transport = FailChosen()
    clock = FakeClock()
    with live_server(settings, port=port):
        sender = Sender(f"http://127.0.0.1:{port}", TOKEN, 5.0, transport=transport)
        outbox = Outbox(sender, Spool(tmp_path / "spool", 1 << 22),
                        Backoff(5, 300, random.Random(1)), clock)
        try:
            yield outbox, transport, clock, settings
        finally:
            outbox.close()


def test_a_poison_report_at_the_head_never_holds_back_the_rest(
        setup: tuple[Outbox, FailChosen, FakeClock, object],
        caplog: pytest.LogCaptureFixture) -> None:
    outbox, transport, clock, settings = setup
    poison, *good = [sample_report(f"h{i}") for i in range(6)]
    transport.poison.add(poison.report_id)
    for r in (poison, *good):
        outbox.keep(r)
    with caplog.at_level(logging.WARNING, "peerwatch.probes.agent.outbox"):
        assert outbox.replay() == 5
    assert sorted(stored(settings).report_ids) == sorted(r.report_id for r in good)
    assert [e.name[13:49] for e in outbox.spool.entries()] == [str(poison.report_id)]
    assert str(poison.report_id) in caplog.text and "HTTP 500: poisoned on purpose" in caplog.text
    due = outbox.replay_due_at()
    assert due is not None and due > clock.now  # it waits, on its own
    fresh = sample_report("fresh")
    assert outbox.submit(fresh).delivery is Delivery.DELIVERED  # not stuck behind it
    assert outbox.replay() == 0 and transport.seen.count(poison.report_id) == 1
    transport.poison.clear()  # the server is fixed; the poison's own backoff runs out
    clock.advance(due - clock.now)
    assert outbox.replay() == 1 and len(outbox.spool) == 0
    assert len(stored(settings).report_ids) == 7


def test_a_refused_report_at_the_head_is_set_aside_counted_and_the_rest_go(
        setup: tuple[Outbox, FailChosen, FakeClock, object],
        caplog: pytest.LogCaptureFixture) -> None:
    outbox, _transport, _clock, settings = setup
    start = sample_report("ahead").started_at + timedelta(hours=3)  # clock far ahead: 422
    refused = sample_report("ahead", at=start)
    good = [sample_report(f"g{i}") for i in range(3)]
    for r in (refused, *good):
        outbox.keep(r)
    with caplog.at_level(logging.ERROR, "peerwatch.probes.agent.outbox"):
        assert outbox.replay() == 3
    assert sorted(stored(settings).report_ids) == sorted(r.report_id for r in good)
    aside = outbox.spool.set_aside_files()
    assert len(aside) == 1 and aside[0].name.endswith(REJECTED_SUFFIX)
    assert outbox.spool.dropped() == 1  # announced in the next report like any drop
    assert caplog.text.count(str(refused.report_id)) == 1 and "HTTP 422" in caplog.text


def test_every_report_failing_backs_off_the_whole_spool(
        setup: tuple[Outbox, FailChosen, FakeClock, object]) -> None:
    outbox, transport, clock, _settings = setup
    reports = [sample_report(f"p{i}") for i in range(10)]
    transport.poison.update(r.report_id for r in reports)
    for r in reports:
        outbox.keep(r)
    assert outbox.replay() == 0
    assert len(transport.seen) == 3  # three failures in a row: the server, not the reports
    assert not outbox.ready()
