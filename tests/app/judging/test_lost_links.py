"""Lost links show their cost: a pair is judged against what its full NVLink width promises,
the reason says how many links are up, and the baseline does not learn the lower figures
(neither judged sweep by sweep nor seeded from history while the links are down)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.queries.common import judged_baseline
from peerwatch.app.queries.health import host_health
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import TestName
from tests.app.factory import T0, expected_value, sweep

DOWN = [(3, 16), (3, 17)]  # 2 of GPU3's 18 links
FULL = expected_value(TestName.CE_WRITE)


@pytest.fixture
def sessions(settings: Settings) -> sessionmaker[Session]:
    return make_sessionmaker(make_engine(settings))


def test_a_pair_with_lost_links_reads_its_cost(sessions: sessionmaker[Session],
                                               settings: Settings) -> None:
    service = AlertingService(sessions, settings, AlertingSettings())
    for i in range(6):  # a healthy history first: full width, full speed
        at = T0 + timedelta(minutes=10 * i)
        with sessions() as s:
            ingest(s, sweep(n=4, at=at, value=lambda s_, d, t: FULL * 0.98), settings, at)
        service.evaluate_host("node-a", at + timedelta(seconds=5))
    before = _baselines(sessions)
    slow = FULL * 16 / 18 * 0.98  # what 16 links carry
    for i in range(8):  # longer at reduced width than the healthy history
        at = T0 + timedelta(hours=1, minutes=10 * i)
        with sessions() as s:
            ingest(s, sweep(n=4, at=at, down_links=DOWN, value=lambda s_, d, t: slow
                            if 3 in (s_, d) else FULL * 0.98), settings, at)
        service.evaluate_host("node-a", at + timedelta(seconds=5))
    with sessions() as s:
        health = host_health(s, settings, "node-a")
        cut = health.tests[(3, 0, TestName.CE_WRITE)]
        assert cut.ratio_expected == pytest.approx(16 / 18 * 0.98, abs=0.005)
        assert cut.expected == pytest.approx(FULL)
        assert "NV18" in cut.reason and "16/18 links up now" in cut.reason
        whole = health.tests[(0, 1, TestName.CE_WRITE)]
        assert whole.ratio_expected == pytest.approx(0.98, abs=0.005)
    after = _baselines(sessions)
    assert after[(3, 0)] == pytest.approx(before[(3, 0)])  # reduced-width samples: not learnt
    assert after[(0, 1)] == pytest.approx(FULL * 0.98)
    service.evaluate_host("node-a", at + timedelta(seconds=6), rejudge=True)
    assert _baselines(sessions)[(3, 0)] is None  # seeded while cut: no baseline, not a low one


def _baselines(sessions: sessionmaker[Session]) -> dict[tuple[int, int], float | None]:
    with sessions() as s:
        host = s.scalars(select(Host).where(Host.name == "node-a")).one()
        found = {(a, b): judged_baseline(s, host.id, (a, b, TestName.CE_WRITE))
                 for a in range(4) for b in range(4) if a != b}
    return {key: base.value if base else None for key, base in found.items()}
