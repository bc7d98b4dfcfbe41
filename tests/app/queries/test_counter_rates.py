"""The database computes link and PCIe replay counter rates (window functions) exactly as the pure
`rate_per_s` does over the same readings: growth between readings, a reset counting as growth
from zero, unknown readings skipped — on SQLite and PostgreSQL."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import delete
from sqlalchemy.orm import Session

from peerwatch.app.analysis.rates import rate_per_s
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.queries.counters import link_rates, pcie_replay_rates
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.history import LINK_KEYFRAME_S, GpuSample, LinkSample, ReportRow
from peerwatch.app.store.tables.inventory import Host
from tests.app.factory import T0
from tests.app.statement_log import statements


def _readings(rng: random.Random, n: int) -> list[int]:
    value, out = rng.randint(0, 50), []
    for _ in range(n):
        if rng.random() < 0.1:
            value = rng.randint(0, 3)  # reset: the counter restarts from zero
        else:
            value += rng.choice([0, 0, 0, 1, 7])
        out.append(value)
    return out


def _host_and_report(s: Session) -> tuple[Host, ReportRow]:
    host = Host(name="h", fabric="simulated:test", first_seen=T0)
    s.add(host)
    s.flush()
    report = ReportRow(report_id=uuid.uuid4(), host_id=host.id,
                       schema_version=1, kind="inventory", started_at=T0, finished_at=T0,
                       received_at=T0, gpu_time_s=0, wall_time_s=0,
                       device_memory_bytes_max=0, agent_cpu_s=0, agent_rss_bytes=0,
                       dropped_reports=0, skipped=[], errors=[])
    s.add(report)
    s.flush()
    return host, report


Stored = tuple[Session, Host, ReportRow]
SINCE = T0 + timedelta(seconds=130)  # the window both rate queries are asked for


@pytest.fixture
def stored(settings: Settings) -> Iterator[Stored]:
    """A session on the test database with one host and one report, the parents every
    sample row needs; the engine is disposed after the test."""
    engine = make_engine(settings)
    try:
        with make_sessionmaker(engine)() as s:
            yield (s, *_host_and_report(s))
    finally:
        engine.dispose()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sparse_rows_give_the_rates_of_every_reading(stored: Stored, seed: int) -> None:
    """Rows left out where a port's error counters repeat its reading before (keyframes
    every LINK_KEYFRAME_S keep every port), as ingest stores them: the rates of the window
    are those of every reading, reset and all."""
    s, host, report = stored
    rng = random.Random(seed)
    times = [T0 + timedelta(seconds=30 * i) for i in range(40)]
    since = times[25]
    expected = {}
    for link in range(3):
        replay = [v if rng.random() < 0.8 else 0 for v in _readings(rng, 40)]
        kept = [(t, r) for t, r in zip(times, replay, strict=True) if t >= since]
        expected[(0, link)] = rate_per_s(kept)
        keyframe = None
        for i, (at, r) in enumerate(zip(times, replay, strict=True)):
            if keyframe is None or (at - keyframe).total_seconds() >= LINK_KEYFRAME_S:
                keyframe = at
            elif replay[i - 1] == r:
                continue  # unchanged since the reading before: not stored
            s.add(LinkSample(host_id=host.id, at=at, gpu=0, link=link,
                             replay=r, recovery=r, crc_flit=r))
    for at in times:  # the host's GPU rows: one per reading
        s.add(GpuSample(report_id=report.id, host_id=host.id, at=at, gpu=0, pcie_replay=0))
    s.commit()
    got = link_rates(s, host.id, since)
    for key, value in expected.items():
        assert got[key]["replay"] == pytest.approx(value), key
    assert all(got[key]["replay"] is not None for key in expected)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sql_rates_equal_the_pure_rates(stored: Stored, seed: int) -> None:
    s, host, report = stored
    rng = random.Random(seed)
    expected = {}
    # a probe reads every port of the host at once: one time per reading, for every link
    times = [T0 + timedelta(seconds=30 * i + rng.randint(0, 5)) for i in range(20)]
    for link in range(3):
        replay = _readings(rng, 20)
        crc = [None if link == 2 else v for v in _readings(rng, 20)]
        for at, r, c in zip(times, replay, crc, strict=True):
            s.add(LinkSample(host_id=host.id, at=at, gpu=0, link=link,
                             replay=r, recovery=r, crc_flit=c))
        kept = [(t, r, c) for t, r, c in zip(times, replay, crc, strict=True) if t >= SINCE]
        expected[(0, link)] = {"replay": rate_per_s([(t, r) for t, r, _ in kept]),
                               "crc_flit": rate_per_s([(t, c) for t, _, c in kept])}
    s.commit()
    got = link_rates(s, host.id, SINCE)
    for key, rates in expected.items():
        for counter, value in rates.items():
            assert got[key][counter] == pytest.approx(value), (key, counter)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sql_pcie_replay_rates_equal_the_pure_rates(stored: Stored, seed: int) -> None:
    """Per GPU, with unknown readings among known ones, resets, and two readings at one
    time (a step that does not move forward is skipped)."""
    s, host, report = stored
    rng = random.Random(seed)
    expected = {}
    for gpu in range(4):
        times = sorted(T0 + timedelta(seconds=30 * (i // 2 if gpu == 1 else i)
                                      + rng.randint(0, 5)) for i in range(20))
        replay = [None if gpu == 3 or rng.random() < 0.2 else v
                  for v in _readings(rng, 20)]
        points = []
        for at, r in zip(times, replay, strict=True):
            s.add(GpuSample(report_id=report.id, host_id=host.id, at=at, gpu=gpu,
                            pcie_replay=r))
            s.flush()  # ids in time order, as a report's samples are stored
            if at >= SINCE:
                points.append((at, r))
        expected[gpu] = rate_per_s(points)
    s.commit()
    got = pcie_replay_rates(s, host.id, SINCE)
    assert any(v is not None for v in expected.values()) and expected[3] is None
    for gpu, value in expected.items():
        assert got.get(gpu) == pytest.approx(value), gpu


def test_counters_that_did_not_move_are_rated_without_window_functions(
        settings: Settings) -> None:
    """Links whose judged counters held still over the window (a healthy host: nearly
    all of them) are rated from plain aggregates, the same rates as `rate_per_s`; only the
    links whose counters moved, or were not read every time, go through the window
    functions, and they are rated as ever."""
    engine = make_engine(settings)
    sessions = make_sessionmaker(engine)
    steady = [T0 + timedelta(seconds=30 * i) for i in range(6)]
    readings = {  # link -> (time, replay, crc_flit) of each reading
        0: [(t, 5, 9) for t in steady],  # held still: rate 0
        # stored once while the host's readings went on: its later readings were left out
        # as repeats (app/ingest/sparse_links.py), so it held still over them: rate 0
        1: [(steady[0], 5, 9)],
        2: [(steady[1], 5, 9), (steady[1], 5, 9)],
        3: [(t, 5, 9 if i != 2 else None) for i, t in enumerate(steady)],  # one unread
        4: [(t, 5 + i, 9) for i, t in enumerate(steady)],  # replay moved
        5: [(t, 5 if i < 3 else 0, 9) for i, t in enumerate(steady)],  # a reset to 0
    }
    with sessions() as s:
        host, report = _host_and_report(s)
        for link, points in readings.items():
            for at, replay, crc in points:
                s.add(LinkSample(host_id=host.id, at=at, gpu=0,
                                 link=link, replay=replay, recovery=replay, crc_flit=crc))
                s.flush()  # ids in time order, as a report's samples are stored
        s.commit()
        with statements(engine) as seen:
            got = link_rates(s, host.id, T0)
        windowed = [q for q in seen if "lag(" in q.lower()]
        s.execute(delete(LinkSample).where(LinkSample.link.in_((3, 4, 5))))
        with statements(engine) as still:
            held = link_rates(s, host.id, T0)  # nothing moved: no window function at all
    engine.dispose()
    for link, points in readings.items():
        if link in (1, 2):
            points = [*points, (steady[-1], *points[-1][1:])]  # the repeats left out
        expected = {"replay": rate_per_s([(t, r) for t, r, _ in points]),
                    "crc_flit": rate_per_s([(t, c) for t, _, c in points])}
        for counter, value in expected.items():
            assert got[(0, link)][counter] == pytest.approx(value), (link, counter)
    assert got[(0, 0)]["replay"] == 0.0 and got[(0, 1)]["replay"] == 0.0
    assert len(windowed) == 1, seen  # links 3, 4 and 5 only
    assert held == {key: got[key] for key in ((0, 0), (0, 1), (0, 2))}
    assert not [q for q in still if "lag(" in q.lower()], still
