"""Slow and oversized clients against a real `peerwatch serve` (app/api/http_guard.py): a body
that never arrives is cut off with 408 and holds no ingest slot meanwhile; a head too large
or with too many fields is 431 before it is all received; a head that never ends is 408;
one address holds only so many connections (429). What uvicorn alone did: waited for ever,
kept every header byte in memory, and let 36 slow reports shut the ingest gate.

The figures (40 slow posters beside a real probe, 100 x 8 MB headers and the server's RSS)
are bench/hostile_clients.py's; this checks the behaviour, not the timings.
"""

from __future__ import annotations

import select
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.app.conftest import PROBE_TOKEN
from tests.app.factory import sweep
from tests.app.serve_process import Served, serving
from tests.conftest import SETTLE_S, eventually

ANSWER_WAIT_S = 60.0  # generous: a loaded machine's server still answers far sooner


def connect(served: Served) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", served.port), timeout=ANSWER_WAIT_S)
    return sock


def answer_of(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (or ANSWER_WAIT_S passes)."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return data


def report_head(length: int) -> bytes:
    return (f"POST /api/v1/reports HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {PROBE_TOKEN}"
            f"\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n").encode()


def post_report(served: Served, body: bytes) -> int:
    r = httpx.post(f"{served.base}/api/v1/reports", content=body, timeout=ANSWER_WAIT_S,
                   headers={"Authorization": f"Bearer {PROBE_TOKEN}",
                            "Content-Type": "application/json"})
    return r.status_code


def no_traceback(served: Served) -> None:
    assert "Traceback" not in served.log_text(), served.log_text()[-3000:]


def test_a_slow_body_is_cut_off_with_408_and_holds_no_ingest_slot(
        tmp_path: Path, db_url: str) -> None:
    # one slot, no queue: a slow body that held the slot, or the door, refuses every report
    env = {"PEERWATCH_BODY_TIMEOUT_S": "15", "PEERWATCH_INGEST_CONCURRENCY": "1",
           "PEERWATCH_INGEST_QUEUE": "0"}
    with serving(tmp_path, db_url, env) as served:
        slow = connect(served)
        slow.sendall(report_head(10_000) + b"{")
        body = sweep(n=2).model_dump_json().encode()
        stored = eventually(lambda: post_report(served, body) in (200, 201), within_s=SETTLE_S)
        assert stored, "a real report was refused while another report's body was arriving"
        assert not select.select([slow], [], [], 0)[0], "the slow body was answered already"
        answer = answer_of(slow)
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:300]
        assert b"PEERWATCH_BODY_TIMEOUT_S" in answer, answer
        assert post_report(served, body) == 200  # still serving; the report was stored once
        no_traceback(served)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server with short deadlines and 4 connections per address, on SQLite."""
    data = tmp_path_factory.mktemp("guarded")
    env = {"PEERWATCH_HEADER_TIMEOUT_S": "2", "PEERWATCH_MAX_CONNECTIONS_PER_ADDRESS": "4"}
    with serving(data, f"sqlite:///{data}/peerwatch.db", env) as served:
        yield served


def test_a_head_over_the_byte_limit_is_431(guarded: Served) -> None:
    r = httpx.get(f"{guarded.base}/healthz", headers={"X-Big": "a" * 100_000},
                  timeout=ANSWER_WAIT_S)
    assert r.status_code == 431 and "PEERWATCH_MAX_HEADER_BYTES" in r.text, r.text
    assert r.headers["connection"] == "close"


def test_too_many_header_fields_are_431(guarded: Served) -> None:
    many = {f"X-Field-{i}": "1" for i in range(150)}
    r = httpx.get(f"{guarded.base}/healthz", headers=many, timeout=ANSWER_WAIT_S)
    assert r.status_code == 431 and "PEERWATCH_MAX_HEADERS" in r.text, r.text


def test_a_head_within_the_limits_is_served(guarded: Served) -> None:
    fields = {f"X-Field-{i}": "b" * 500 for i in range(90)}
    r = httpx.get(f"{guarded.base}/healthz", headers=fields, timeout=ANSWER_WAIT_S)
    assert r.status_code == 200, r.text


def test_an_unfinished_8_mb_header_is_refused_long_before_its_end(guarded: Served) -> None:
    """The 431 comes while the client is still sending: the server never holds the header."""
    sock = connect(guarded)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Fill: ")
    sent, chunk = 0, b"a" * 65536
    while sent < 8 << 20 and not select.select([sock], [], [], 0)[0]:
        sock.sendall(chunk)
        sent += len(chunk)
    answer = answer_of(sock)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:300]
    assert sent < 8 << 20, f"no answer until all {sent} bytes were sent"


def test_a_head_that_never_ends_is_408(guarded: Served) -> None:
    sock = connect(guarded)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
    answer = answer_of(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:300]
    assert b"PEERWATCH_HEADER_TIMEOUT_S" in answer


def held_open(served: Served) -> socket.socket:
    """A connection the server keeps for its body deadline (60 s): answered at once, its
    promised body never sent."""
    sock = connect(served)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n")
    return sock


def test_one_address_holds_only_so_many_connections(guarded: Served) -> None:
    held = [held_open(guarded) for _ in range(4)]
    try:
        extra = connect(guarded)
        answer = answer_of(extra)
        assert answer.startswith(b"HTTP/1.1 429 "), answer[:300]
        assert b"retry-after: 5" in answer and b"PEERWATCH_MAX_CONNECTIONS_PER_ADDRESS" in answer
    finally:
        held.pop().close()
    try:  # one closed: a new connection is served again
        served = eventually(lambda: _healthz(guarded) == 200)
        assert served, "no connection served after one of the address's closed"
    finally:
        for sock in held:
            sock.close()
    no_traceback(guarded)


def _healthz(served: Served) -> int | None:
    try:
        return httpx.get(f"{served.base}/healthz", timeout=ANSWER_WAIT_S).status_code
    except httpx.TransportError:
        return None
