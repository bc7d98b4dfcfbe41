"""What each server answer means to the probe, and how long it waits before trying again.

The real server gives 201/200/403/422 in tests/probes/agent/test_worker.py; answers it never gives
on purpose (503 with Retry-After, 429, 500, a dropped keep-alive connection) come from a
hand-written fake server on httpx's MockTransport.
"""

from __future__ import annotations

import email.utils
import gzip
import random
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from peerwatch.probes.agent.sender import WIRE_HEADER, Backoff, Outcome, Sender, classify
from peerwatch.probes.report import wire_fingerprint
from tests.probes.sample_reports import sample_report


@pytest.mark.parametrize(("status", "outcome"), [
    (200, Outcome.DELIVERED), (201, Outcome.DELIVERED), (204, Outcome.DELIVERED),
    (500, Outcome.RETRY), (502, Outcome.RETRY), (503, Outcome.RETRY), (408, Outcome.RETRY),
    (429, Outcome.RETRY), (401, Outcome.UNAUTHORIZED), (403, Outcome.UNAUTHORIZED),
    (404, Outcome.UNAUTHORIZED), (400, Outcome.REJECTED), (413, Outcome.REJECTED),
    (422, Outcome.REJECTED),
])
def test_classification(status: int, outcome: Outcome) -> None:
    assert classify(status) is outcome


def _sender(handler) -> Sender:
    return Sender("http://fake", "tok", 1.0, transport=httpx.MockTransport(handler))


def test_request_carries_bearer_token_and_the_report() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(201, json={"duplicate": False})

    report = sample_report()
    assert _sender(handler).send(report).outcome is Outcome.DELIVERED
    assert seen[0].url.path == "/api/v1/reports"
    assert seen[0].headers["authorization"] == "Bearer tok"
    assert seen[0].content == report.model_dump_json().encode()
    assert seen[0].headers[WIRE_HEADER] == wire_fingerprint()  # its bytes: canonical JSON


def test_overloaded_server_is_retried_after_its_retry_after() -> None:
    answer = _sender(lambda r: httpx.Response(503, headers={"Retry-After": "120"},
                                              json={"detail": "draining"})).send(sample_report())
    assert (answer.outcome, answer.status, answer.message) == (Outcome.RETRY, 503, "draining")
    assert answer.retry_after_s == 120
    waits = [Backoff(5, 60, random.Random(seed)).failure(at_least_s=120) for seed in range(20)]
    assert all(120 <= w <= 180 for w in waits)  # never sooner, past the 60 s cap if asked
    assert len({round(w, 3) for w in waits}) == 20  # jittered: the fleet does not return at once


def test_retry_after_as_an_http_date() -> None:
    in_a_minute = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=60),
                                              usegmt=True)
    answer = _sender(lambda r: httpx.Response(429, headers={"Retry-After": in_a_minute})
                     ).send(sample_report())
    assert answer.outcome is Outcome.RETRY and answer.retry_after_s is not None
    assert 55 <= answer.retry_after_s <= 60


def test_validation_errors_are_reported_field_by_field() -> None:
    detail = [{"loc": ["body", "inventory", "gpus", 1], "msg": "duplicate GPU index 1"},
              {"loc": ["body", "started_at"], "msg": "timestamp has no timezone"}]
    answer = _sender(lambda r: httpx.Response(422, json={"detail": detail})).send(
        sample_report())
    assert answer.outcome is Outcome.REJECTED
    assert answer.message == ("body.inventory.gpus.1: duplicate GPU index 1; "
                              "body.started_at: timestamp has no timezone")


def test_non_json_error_page_is_quoted() -> None:
    answer = _sender(lambda r: httpx.Response(502, text="<html>Bad Gateway</html>")).send(
        sample_report())
    assert answer.outcome is Outcome.RETRY and answer.message == "<html>Bad Gateway</html>"


def test_a_closed_keep_alive_connection_is_retried_once_at_once() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
        return httpx.Response(200, json={"duplicate": True})

    assert _sender(handler).send(sample_report()).outcome is Outcome.DELIVERED
    assert len(calls) == 2


def test_timeout_means_retry() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    answer = _sender(handler).send(sample_report())
    assert answer.outcome is Outcome.RETRY and answer.status is None
    assert "ReadTimeout" in answer.message


def test_backoff_doubles_with_jitter_up_to_its_cap() -> None:
    backoff = Backoff(5, 300, random.Random(7))
    delays = [backoff.failure() for _ in range(10)]
    nominal = [5, 10, 20, 40, 80, 160, 300, 300, 300, 300]
    assert all(n / 2 <= d <= n for d, n in zip(delays, nominal, strict=True))
    assert len({round(d, 3) for d in delays}) == 10  # jittered: no two probes in lockstep
    backoff.success()
    assert 2.5 <= backoff.failure() <= 5


def test_bad_token_waits_the_longest_step_at_once() -> None:
    backoff = Backoff(5, 300, random.Random(7))
    assert backoff.give_up_for_now() == 300
    assert backoff.failure() <= 300  # and stays capped


def _reads_gzip(status: int = 201, json: object = None) -> httpx.Response:
    return httpx.Response(status, headers={"Accept-Encoding": "gzip"}, json=json)


def test_bodies_go_compressed_once_the_server_said_it_reads_gzip() -> None:
    """The first report goes plain (nothing said yet); its answer says gzip, so the next
    ones go gzip-compressed, and inflate to the very bytes a plain send would carry."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return _reads_gzip(json={"duplicate": False})

    sender, report = _sender(handler), sample_report()
    assert sender.send(report).outcome is Outcome.DELIVERED
    assert sender.send(report).outcome is Outcome.DELIVERED
    assert "content-encoding" not in seen[0].headers
    assert seen[0].content == report.model_dump_json().encode()
    assert seen[1].headers["content-encoding"] == "gzip"
    assert gzip.decompress(seen[1].content) == seen[0].content
    assert len(seen[1].content) < len(seen[0].content)


def test_a_server_rolled_back_gets_the_report_plain_at_once() -> None:
    """Compressing (an earlier answer said gzip), the probe meets a server that no longer
    reads it: its 422 does not say gzip, so the same report is sent again plain at once and
    delivered, never set aside as rejected; a 429 that does not say it is not sent again at
    once (it is a refusal to retry later), and the next send goes plain."""
    seen: list[httpx.Request] = []
    answers = [_reads_gzip(), httpx.Response(422, json={"detail": "body is not valid JSON"}),
               httpx.Response(201, json={}), httpx.Response(429, headers={"Retry-After": "1"}),
               httpx.Response(201, json={})]

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers[len(seen) - 1]

    sender, report = _sender(handler), sample_report()
    assert sender.send(report).outcome is Outcome.DELIVERED  # plain; the answer says gzip
    assert sender.send(report).outcome is Outcome.DELIVERED  # gzip -> 422, then plain -> 201
    assert [r.headers.get("content-encoding") for r in seen] == [None, "gzip", None]
    assert seen[2].content == report.model_dump_json().encode()
    sender.gzip = True
    assert sender.send(report).outcome is Outcome.RETRY  # gzip -> 429: later, not at once
    assert sender.send(report).outcome is Outcome.DELIVERED
    assert [r.headers.get("content-encoding") for r in seen[3:]] == ["gzip", None]
