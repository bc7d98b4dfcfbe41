"""The database computes link and PCIe replay counter rates (window functions) exactly as the pure
`rate_per_s` does over the same readings: growth between readings, a reset counting as growth
from zero, unknown readings skipped — on SQLite and PostgreSQL."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from app.analysis.rates import rate_per_s
from app.config import Settings
from app.db import make_engine, make_sessionmaker
from app.models import GpuSample, Host, LinkSample, ReportRow
from app.queries.counters import link_rates, pcie_replay_rates
from tests.app.factory import T0


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
def test_sql_rates_equal_the_pure_rates(stored: Stored, seed: int) -> None:
    s, host, report = stored
    rng = random.Random(seed)
    expected = {}
    for link in range(3):
        times = [T0 + timedelta(seconds=30 * i + rng.randint(0, 5)) for i in range(20)]
        replay = _readings(rng, 20)
        crc = [None if link == 2 else v for v in _readings(rng, 20)]
        for at, r, c in zip(times, replay, crc, strict=True):
            s.add(LinkSample(report_id=report.id, host_id=host.id, at=at, gpu=0, link=link,
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
