"""One answer per object (issue 38): a pair with a test left `unknown` because one of its
GPUs was throttled (HW slowdown) is `unknown`, with that reason, in /health, every matrix
cell of it, /scheduler/hosts and /metrics; never `healthy` from the tests the throttle left
alone (latency, a staged copy)."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.exposition.collector import PeerwatchCollector
from peerwatch.app.exposition.loader import load_snapshot
from peerwatch.app.queries.health import host_health
from peerwatch.app.queries.matrix import latest_matrix
from peerwatch.app.queries.scheduler import schedulable
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import TestName
from peerwatch.probes.sim.faults import ThrottledGpu
from tests.app.alerting.simhost import SimHost

THROTTLED = 3


def test_a_throttled_gpus_pairs_are_unknown_everywhere(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    host = SimHost(sessions, sqlite_settings, preset="hgx8", hostname="thr-a")
    for _ in range(3):
        host.step(300, "sweep")
    host.inject(ThrottledGpu(gpu=THROTTLED, reason="hw", factor=0.6))
    for _ in range(2):  # past the sustain of the slow tests: they are judged, confounded
        host.step(600, "sweep")
    with host.sessions() as s:
        health = host_health(s, host.settings, host.hostname)
        cells = [c for t in (TestName.CE_READ, TestName.CE_WRITE, TestName.LATENCY)
                 for c in latest_matrix(s, host.settings, host.hostname, t).cells]
        (offer,) = schedulable(s, 1)[0]
        snap = load_snapshot(s)
    through = [p for p in health.judgement.pairs if THROTTLED in (p.src, p.dst)]
    assert len(through) == 14
    for p in through:
        assert p.verdict is Verdict.UNKNOWN, p.reason
        assert "HW slowdown" in p.reason and f"GPU{THROTTLED}" in p.reason
        assert {t.verdict for t in p.tests} == {Verdict.UNKNOWN, Verdict.HEALTHY}  # latency
    others = [p for p in health.judgement.pairs if THROTTLED not in (p.src, p.dst)]
    assert {p.verdict for p in others} == {Verdict.HEALTHY}
    mine = [c for c in cells if THROTTLED in (c.src, c.dst)]
    assert mine and {c.verdict for c in mine} == {Verdict.UNKNOWN}, \
        {(c.src, c.dst, c.verdict) for c in mine}
    assert "HW slowdown" in next(c.reason for c in mine if "this test alone" in c.reason)
    assert {(p.src, p.dst) for p in offer.unknown_pairs} == {(p.src, p.dst) for p in through}
    assert all("HW slowdown" in p.reason for p in offer.unknown_pairs)
    families = {f.name: f for f in PeerwatchCollector(lambda gpus: snap,
                                                      AlertingSettings()).collect()}
    series = {(s.labels["gpu"], s.labels["peer_gpu"], s.labels["cause"])
              for s in families["peerwatch_pair_unjudged"].samples}
    assert series == {(str(p.src), str(p.dst), "throttle") for p in through}
