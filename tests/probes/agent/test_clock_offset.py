"""The probe measures its clock's offset from the server's itself (NTP-style, from the
answer's `Date`), so a slow server's delay never reads as clock skew."""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime, timedelta

import httpx

from peerwatch.probes.agent.clock_offset import OFFSET_HEADER, RTT_MAX_S, offset_of, offset_sample
from peerwatch.probes.agent.sender import Sender
from tests.probes.sample_reports import sample_report

SERVER_NOW = datetime(2026, 12, 3, 12, 0, 0, tzinfo=UTC)


def _date(at: datetime) -> str:
    return email.utils.format_datetime(at, usegmt=True)


def test_a_probe_behind_reads_positive_and_one_ahead_negative() -> None:
    behind = SERVER_NOW - timedelta(minutes=5)
    sample = offset_sample(behind, behind + timedelta(seconds=1), _date(SERVER_NOW))
    assert sample is not None and abs(sample - 300.0) <= 1.0  # the server's sign: behind > 0
    ahead = SERVER_NOW + timedelta(minutes=5)
    sample = offset_sample(ahead, ahead + timedelta(seconds=1), _date(SERVER_NOW))
    assert sample is not None and abs(sample + 300.0) <= 1.0


def test_an_exchange_too_slow_or_without_a_date_says_nothing() -> None:
    slow = SERVER_NOW + timedelta(seconds=RTT_MAX_S + 1)
    assert offset_sample(SERVER_NOW, slow, _date(SERVER_NOW)) is None
    assert offset_sample(SERVER_NOW, SERVER_NOW, None) is None
    assert offset_sample(SERVER_NOW, SERVER_NOW, "yesterday-ish") is None


def test_a_header_that_is_no_sane_number_is_ignored() -> None:
    assert offset_of("12.5") == 12.5
    for bad in (None, "", "soon", "nan", "inf", "1e12", "9" * 40):
        assert offset_of(bad) is None


def test_the_sender_sends_the_offset_its_last_good_answer_showed() -> None:
    probe_clock = [SERVER_NOW - timedelta(minutes=5)]  # 5 min behind the server
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        slow = len(seen) == 3  # the third answer comes after a 60 s wait: it says nothing
        probe_clock[0] += timedelta(seconds=60 if slow else 0.2)
        server = probe_clock[0] + timedelta(minutes=5)
        return httpx.Response(201, json={}, headers={"Date": _date(server)})

    sender = Sender("http://fake", "tok", 1.0, transport=httpx.MockTransport(handler),
                    wall=lambda: probe_clock[0])
    for _ in range(4):
        sender.send(sample_report())
    assert OFFSET_HEADER not in seen[0].headers  # nothing measured yet
    sent = [float(r.headers[OFFSET_HEADER]) for r in seen[1:]]
    assert all(abs(s - 300.0) <= 1.0 for s in sent), sent
