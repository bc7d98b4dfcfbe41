"""The ingest gate in a real server (uvicorn on a loopback port): a full queue is refused at
once with 429 + Retry-After, a client that gave up while its report waited costs nothing,
and /healthz and /readyz answer while every slot is taken."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from peerwatch.app.routes import reports
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import Report
from tests.app.factory import sweep
from tests.conftest import eventually
from tests.probes.live_server import TOKEN, live_server, server_settings, stored

HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Every ingest waits for the returned event before it stores: the slot stays taken."""
    release, entered = threading.Event(), threading.Event()
    real = reports.store_body

    def slow(*args: Any, **kw: Any) -> Any:
        entered.set()
        release.wait(30)
        return real(*args, **kw)

    monkeypatch.setattr(reports, "store_body", slow)
    release.entered = entered  # type: ignore[attr-defined]
    yield release
    release.set()


def _settings(tmp_path: Path, **gate: Any) -> Settings:
    return server_settings(tmp_path).model_copy(update=gate)


def _post(url: str, report: Report, timeout: float = 30) -> httpx.Response:
    return httpx.post(f"{url}/api/v1/reports", content=report.model_dump_json(),
                      headers=HEADERS, timeout=timeout)


def _in_background(fn: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    return thread, out


async def _held_until(gate: Any, release: asyncio.Event) -> int:
    """A report that holds its slot until `release`: 201, or the status it was refused with."""
    from peerwatch.app.ingest.gate import Saturated

    try:
        async with gate.slot():
            await release.wait()
            return 201
    except Saturated as refused:
        return refused.status_code


async def _newcomer(gate: Any) -> tuple[int, float]:
    """A report asking for a slot now: (201 or the refusal's status, seconds until then)."""
    from peerwatch.app.ingest.gate import Saturated

    started = time.monotonic()
    try:
        async with gate.slot():
            return 201, time.monotonic() - started
    except Saturated as refused:
        return refused.status_code, time.monotonic() - started


def test_full_queue_is_refused_at_once_and_health_answers(
        tmp_path: Path, held: threading.Event) -> None:
    settings = _settings(tmp_path, ingest_concurrency=1, ingest_queue=0,
                         ingest_retry_after_s=3)
    with live_server(settings) as server:
        first, answers = _in_background(lambda: _post(server.url, sweep(n=2)))
        assert held.entered.wait(10)  # type: ignore[attr-defined]
        refused = _post(server.url, sweep(n=2, report_id=uuid.uuid4()))
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "3"
        assert "saturated" in refused.json()["detail"]
        assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
        ready = httpx.get(f"{server.url}/readyz", timeout=10)
        assert ready.status_code == 503 and ready.json()["status"] == "busy"
        held.set()
        first.join(30)
        assert answers[0].status_code == 201
        assert httpx.get(f"{server.url}/readyz", timeout=10).json()["status"] == "ready"
    assert len(stored(settings).report_ids) == 1


def test_a_client_that_went_away_is_not_worked_for(
        tmp_path: Path, held: threading.Event) -> None:
    settings = _settings(tmp_path, ingest_concurrency=1, ingest_queue=4, ingest_wait_s=20)
    kept, gone = sweep(n=2), sweep(n=2, host="node-gone")
    with live_server(settings) as server:
        first, _ = _in_background(lambda: _post(server.url, kept))
        assert held.entered.wait(10)  # type: ignore[attr-defined]
        with pytest.raises(httpx.ReadTimeout):  # it waits for the slot, then gives up
            _post(server.url, gone, timeout=0.5)
        held.set()
        first.join(30)
        for _ in range(100):
            load = httpx.get(f"{server.url}/readyz", timeout=10).json()["ingest"]
            if load["client_gone"] or load["accepted"] > 1:
                break
            threading.Event().wait(0.05)
        assert load["client_gone"] == 1 and load["accepted"] == 1
    assert stored(settings).report_ids == [kept.report_id]


@pytest.mark.parametrize(("slots", "queue", "codes"), [
    (1, 0, [429] * 7), (1, 2, [503] + [429] * 6), (2, 2, [503, 503] + [429] * 4)])
def test_a_burst_takes_the_free_slots_and_the_queue_then_is_refused(
        tmp_path: Path, slots: int, queue: int, codes: list[int]) -> None:
    """Eight reports arrive in the same instant, before any report has let go of a slot (so
    how long one is held is unknown: PRIOR_HOLD_S, 0.1 s): `slots` are taken, up to `queue`
    wait as far as the prior says a slot comes within half the 0.2 s wait (and time out, the
    slots being held), the rest are refused at once."""
    from peerwatch.app.ingest.gate import IngestGate

    gate = IngestGate(_settings(tmp_path, ingest_concurrency=slots, ingest_queue=queue,
                                ingest_wait_s=0.2), serialise_writers=False)

    async def burst() -> list[int]:
        release = asyncio.Event()
        tasks = [asyncio.create_task(_held_until(gate, release)) for _ in range(8)]
        refused = await asyncio.gather(*tasks[slots:])
        release.set()
        return [*await asyncio.gather(*tasks[:slots]), *sorted(refused, reverse=True)]

    waited = codes.count(503)
    assert asyncio.run(burst()) == [201] * slots + codes
    assert (gate.stats.refused_full, gate.stats.refused_wait) == (8 - slots - waited, waited)


async def _arriving(gate: Any, body_in: asyncio.Event, release: asyncio.Event) -> int:
    """A report at the door whose body arrives at `body_in`, then holding its slot until
    `release`: 201, or the status it was refused with (at the door or for its slot)."""
    from peerwatch.app.ingest.gate import Saturated

    try:
        with gate.receiving():
            await body_in.wait()
        async with gate.slot(admitted=True):
            await release.wait()
            return 201
    except Saturated as refused:
        return refused.status_code


def test_reports_arriving_together_are_let_in_only_as_far_as_slots_and_queue(
        tmp_path: Path) -> None:
    """Eight reports at the door in the same instant, none of their bodies in yet (so no
    slot is taken): two slots and one queue place let three in, the other five are refused
    at the door with 429 before their bodies are received; the queued one waits its 0.2 s
    for a slot the holders keep, and is answered 503."""
    from peerwatch.app.ingest.gate import IngestGate

    gate = IngestGate(_settings(tmp_path, ingest_concurrency=2, ingest_queue=1,
                                ingest_wait_s=0.2), serialise_writers=False)

    async def burst() -> tuple[list[int], int]:
        body_in, release = asyncio.Event(), asyncio.Event()
        tasks = [asyncio.create_task(_arriving(gate, body_in, release)) for _ in range(8)]
        await asyncio.sleep(0)  # every one at the door, every body still arriving
        at_door = gate.stats.receiving
        body_in.set()
        refused = await asyncio.gather(*tasks[2:])
        release.set()
        return [*await asyncio.gather(*tasks[:2]), *refused], at_door

    codes, at_door = asyncio.run(burst())
    assert at_door == 3
    assert codes == [201, 201, 503] + [429] * 5
    assert (gate.stats.refused_full, gate.stats.refused_wait, gate.stats.accepted) == (5, 1, 0)
    assert gate.stats.receiving == gate.stats.waiting == gate.stats.active == 0


def test_a_body_still_arriving_stops_counting_at_the_door(tmp_path: Path) -> None:
    """One slot, no queue, and a report whose body is still arriving: a newcomer is let in
    once that body has been arriving for ARRIVING_S (a probe's takes milliseconds); counted
    for as long as it took, 36 bodies sent at 1 byte/s shut the door on every real report."""
    from peerwatch.app.ingest.gate import IngestGate, Saturated

    gate = IngestGate(_settings(tmp_path, ingest_concurrency=1, ingest_queue=0),
                      serialise_writers=False)

    def newcomer_let_in() -> bool:
        try:
            with gate.receiving():
                return True
        except Saturated:
            return False

    with gate.receiving():  # the slow body, never finished here
        assert eventually(newcomer_let_in), "a body arriving for ever kept the door shut"
        assert gate.stats.receiving == 1


def test_sqlite_locked_by_another_process_is_503_with_retry_after(tmp_path: Path) -> None:
    """Another writer (here a second connection, as another process would hold it) keeps
    the SQLite file locked past the busy timeout: 503 + Retry-After, never a 500."""
    import sqlite3

    from fastapi.testclient import TestClient

    from peerwatch.app.main import create_app

    settings = _settings(tmp_path, sqlite_busy_timeout_ms=100, ingest_retry_after_s=2)
    other = sqlite3.connect(settings.database_url.removeprefix("sqlite:///"))
    other.execute("BEGIN IMMEDIATE")  # the write lock, held
    try:
        with TestClient(create_app(settings)) as client:
            r = client.post("/api/v1/reports", content=sweep(n=2).model_dump_json(),
                            headers=HEADERS)
            assert r.status_code == 503 and r.headers["Retry-After"] == "2"
            assert "locked" in r.json()["detail"]
            assert client.get("/readyz").json()["ingest"]["refused_locked"] == 1
    finally:
        other.rollback()
        other.close()
    assert stored(settings).report_ids == []


def test_a_saturated_server_refuses_before_receiving_the_body(
        tmp_path: Path, held: threading.Event) -> None:
    """Headers promising a 50 MB report, and no body: the 429 comes back at once, so the
    server did not wait to receive a report it was going to refuse."""
    settings = _settings(tmp_path, ingest_concurrency=1, ingest_queue=0)
    with live_server(settings) as server:
        first, answers = _in_background(lambda: _post(server.url, sweep(n=2)))
        assert held.entered.wait(10)  # type: ignore[attr-defined]
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            conn.sendall((f"POST /api/v1/reports HTTP/1.1\r\nHost: {host}\r\n"
                          f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json"
                          "\r\nContent-Length: 50000000\r\n\r\n").encode())
            status_line = conn.makefile("rb").readline().decode()
        assert status_line.split()[1] == "429", status_line
        held.set()
        first.join(30)
        assert answers[0].status_code == 201


def test_a_newcomer_that_would_wait_past_the_limit_is_refused_at_once(tmp_path: Path) -> None:
    """Slots held ~0.3 s each, one slot, a 1 s wait of which a newcomer may expect half
    (ADMIT_SHARE): the second in the queue would wait ~0.6 s, so it gets a 429 at once
    instead of risking a 503 after waiting 1 s for nothing."""
    from peerwatch.app.ingest.gate import IngestGate

    gate = IngestGate(_settings(tmp_path, ingest_concurrency=1, ingest_queue=10,
                                ingest_wait_s=1.0), serialise_writers=False)

    async def hold(seconds: float) -> None:
        async with gate.slot():
            await asyncio.sleep(seconds)

    async def scene() -> tuple[int, float]:
        await hold(0.3)  # what a slot is held for, as the gate learns it
        holder = asyncio.create_task(hold(5.0))
        await asyncio.sleep(0)  # the holder takes the slot
        waiter = asyncio.create_task(hold(0.0))  # first in the queue: ~0.3 s, it may wait
        await asyncio.sleep(0)
        try:
            return await _newcomer(gate)
        finally:
            holder.cancel()
            waiter.cancel()

    code, _ = asyncio.run(scene())
    assert code == 429  # at once: refused as full, not after a wait that ran out
    assert gate.stats.refused_full == 1 and gate.stats.refused_wait == 0


def test_a_report_that_finds_no_slot_is_refused_within_the_default_wait(
        tmp_path: Path) -> None:
    """A report arriving while the one slot is held, before the gate knows how long slots
    are held, waits at most the default `ingest_wait_s` (1 s: long enough for a few sweeps'
    holds, so one let in is stored, not refused for an estimate a few ms short) and is
    answered 503, long before the holder lets go."""
    from peerwatch.app.ingest.gate import IngestGate

    settings = _settings(tmp_path, ingest_concurrency=1)
    assert settings.ingest_wait_s == Settings.model_fields["ingest_wait_s"].default == 1.0
    gate = IngestGate(settings, serialise_writers=False)

    async def scene() -> tuple[int, float]:
        release = asyncio.Event()
        holder = asyncio.create_task(_held_until(gate, release))
        await asyncio.sleep(0)  # the holder takes the slot
        try:
            return await _newcomer(gate)
        finally:
            release.set()
            await holder

    code, waited = asyncio.run(scene())
    assert code == 503 and waited >= 1.0
    assert gate.stats.refused_wait == 1


def test_a_wait_of_zero_never_waits_a_newcomer_is_refused_at_once(tmp_path: Path) -> None:
    """`ingest_wait_s=0`: no report waits for a slot, even with room in the queue and no
    hold time learnt yet — 429 at once, without a timer."""
    from peerwatch.app.ingest.gate import IngestGate

    gate = IngestGate(_settings(tmp_path, ingest_concurrency=1, ingest_queue=10,
                                ingest_wait_s=0), serialise_writers=False)

    async def scene() -> list[int]:
        release = asyncio.Event()
        tasks = [asyncio.create_task(_held_until(gate, release)) for _ in range(3)]
        refused = await asyncio.gather(*tasks[1:])
        release.set()
        return [await tasks[0], *refused]

    assert asyncio.run(scene()) == [201, 429, 429]
    assert (gate.stats.refused_full, gate.stats.refused_wait) == (2, 0)


def test_the_demo_keeps_a_longer_wait_than_a_server(tmp_path: Path) -> None:
    """The demo's boards post at the same moments from one process on one machine: they may
    wait for a slot instead of being refused and spooled."""
    from peerwatch.app.demo.run import DemoOptions, demo_settings

    demo = demo_settings(DemoOptions(data_dir=tmp_path))
    assert demo.ingest_wait_s > Settings.model_fields["ingest_wait_s"].default


def test_answered_reports_waiting_for_their_expansion_fill_the_door_too(
        tmp_path: Path) -> None:
    """Under `serve` a report lets go of its slot at the answer and is expanded after: with
    slots + queue reports answered and not yet expanded, the next is refused at the door
    (429, nothing read) although every slot is free, and let in again once one is done."""
    from peerwatch.app.ingest.gate import IngestGate, Saturated

    gate = IngestGate(_settings(tmp_path, ingest_concurrency=2, ingest_queue=3),
                      serialise_writers=False)
    assert gate.expand_backlog == 5
    gate.stats.expanding = 5
    with pytest.raises(Saturated) as refused, gate.receiving():
        pass
    assert refused.value.status_code == 429 and gate.saturated
    gate.stats.expanding = 4
    with gate.receiving():
        assert not gate.saturated
