"""Attribution of a bad pair, on hand-built 8-GPU reports (tests/app/factory.py): the fault is
attributed to the object at fault, and only it pages and leaves the scheduler.

1. one GPU failing (or slow) with every peer is the fault: it alone is down (degraded), its
   peers' pairs read "explained by GPU3", the other seven stay healthy and offerable; a pair
   failing between two GPUs whose other pairs work is a pair fault: one PairCopiesFailing,
   both GPUs healthy and offered, never in one set (`apart`);
2. PeerCopiesFailing ("links up and fabric COMPLETED but peer copies fail") fires only where
   its premises hold: P2P unsupported is P2PAccessLost's page, a fabric not ready is
   NVSwitchFabricNotReady's;
3. a fabric IN_PROGRESS or a down link makes every pair through it non-healthy ("not
   trusted: GPU6 fabric in progress") in /health, the matrix and the scheduler;
4. a port the inventory no longer lists (17 of 18) counts against the designed links.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.ingest.rows import ingest
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.queries.health import host_health
from peerwatch.app.queries.health_view import health_view
from peerwatch.app.queries.matrix import latest_matrix
from peerwatch.app.queries.scheduler import schedulable
from peerwatch.app.records.health import HostHealth
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.alerts import Alert
from peerwatch.probes.report import P2PCap, P2PStatus, Report, ReportKind, TestName
from tests.app.factory import T0, healthy, sweep

N = 8
ERROR = "CUDA error: an illegal memory access was encountered"


class Board:
    """One 8-GPU host reporting into the server, evaluated after every report."""

    def __init__(self, sessions: sessionmaker[Session], settings: Settings) -> None:
        self.sessions, self.settings = sessions, settings
        self.service = AlertingService(sessions, settings, AlertingSettings())

    def deliver(self, report: Report) -> None:
        received = report.finished_at + timedelta(seconds=5)
        with self.sessions() as s:
            ingest(s, report, self.settings, received, sent_at=report.finished_at)
        self.service.evaluate_host(report.host.hostname, received)

    def active(self) -> set[tuple[str, str | None, str | None]]:
        """(rule, gpu, peer_gpu) of every pending and firing alert."""
        with self.sessions() as s:
            return {(a.rule, a.labels.get("gpu"), a.labels.get("peer_gpu"))
                    for a in s.scalars(select(Alert).where(Alert.state.in_(
                        ("pending", "firing"))))}

    def rules_on(self, gpu: int) -> set[str]:
        return {r for r, g, p in self.active() if str(gpu) in (g, p)}

    def health(self) -> HostHealth:
        with self.sessions() as s:
            return host_health(s, self.settings, "node-a")

    def offered(self, wanted: int = 1) -> list[int]:
        with self.sessions() as s:
            hosts, why = schedulable(s, wanted)
        assert hosts, why
        return hosts[0].healthy_gpus

    def cells(self, test: TestName = TestName.CE_WRITE) -> dict[tuple[int, int], Verdict]:
        with self.sessions() as s:
            return {(c.src, c.dst): c.verdict
                    for c in latest_matrix(s, self.settings, "node-a", test).cells}


def _with(report: Report, **inventory: object) -> Report:
    return report.model_copy(update={"inventory": report.inventory.model_copy(update=inventory)})


def _slow_with(gpu: int, factor: float = 0.5):  # type: ignore[no-untyped-def]
    def value(s: int, d: int, t: TestName) -> float | None:
        v = healthy(s, d, t)
        return v * factor if gpu in (s, d) and v is not None else v
    return value


def _gpu_verdicts(h: HostHealth) -> dict[int, Verdict]:
    return {g.gpu: g.verdict for g in h.gpus}


def _failing_with(gpu: int) -> dict[tuple[int, int], str]:
    return {(s, d): ERROR for s in range(N) for d in range(N) if s != d and gpu in (s, d)}


def test_a_gpu_failing_with_every_peer_is_the_one_fault_and_its_peers_stay_offered(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    board = Board(sessions, sqlite_settings)
    board.deliver(sweep(n=N, at=T0))
    for i in (1, 2):  # twice: a repeated failure is down
        board.deliver(sweep(n=N, at=T0 + timedelta(seconds=600 * i), errors=_failing_with(3)))
    gpu_alerts = {(r, g) for r, g, _ in board.active() if g is not None}
    assert gpu_alerts == {("PeerCopiesFailing", "3")}  # one GPU page, not eight
    h = board.health()
    verdicts = _gpu_verdicts(h)
    assert verdicts.pop(3) is Verdict.DOWN
    assert set(verdicts.values()) == {Verdict.HEALTHY}, [g.reason for g in h.gpus]
    assert "peer copies fail with every peer" in h.gpus[3].reason
    assert h.judgement.verdict is Verdict.DEGRADED  # not "all 8 GPUs down"
    with_3 = [p for p in h.judgement.pairs if 3 in (p.src, p.dst)]
    assert len(with_3) == 14
    for p in with_3:  # non-healthy, blamed on GPU3 alone, in words
        assert p.verdict is Verdict.DOWN and p.explained_by == 3
        assert f"GPU{p.src}->GPU{p.dst} explained by GPU3, whose copies fail with every " \
               "peer" in p.reason
    assert "explained by GPU3" in h.gpus[0].reason  # the peer says why it is not blamed
    assert board.offered(7) == [0, 1, 2, 4, 5, 6, 7]
    cells = board.cells()
    assert {v for k, v in cells.items() if 3 in k} == {Verdict.DOWN}
    assert {v for k, v in cells.items() if 3 not in k} == {Verdict.HEALTHY}


def test_a_gpu_slow_with_every_peer_is_one_gpu_alert_not_fourteen_pair_alerts(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    board = Board(sessions, sqlite_settings)
    board.deliver(sweep(n=N, at=T0))
    for i in range(1, 5):  # slow for 15 min: past the 10-min sustain
        board.deliver(sweep(n=N, at=T0 + timedelta(seconds=300 * i), value=_slow_with(5)))
    assert {(r, g, p) for r, g, p in board.active()} == {("GPUPeerCopiesSlow", "5", None)}
    h = board.health()
    verdicts = _gpu_verdicts(h)
    assert verdicts.pop(5) is Verdict.DEGRADED
    assert set(verdicts.values()) == {Verdict.HEALTHY}
    assert "copies run slow with every peer (7 of 7)" in h.gpus[5].reason
    assert all(p.verdict is Verdict.DEGRADED and p.explained_by == 5
               for p in h.judgement.pairs if 5 in (p.src, p.dst))
    assert board.offered() == [0, 1, 2, 3, 4, 6, 7]


def test_a_pair_failing_between_two_working_gpus_is_a_pair_fault(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    board = Board(sessions, sqlite_settings)
    board.deliver(sweep(n=N, at=T0))
    errors = {(2, 5): ERROR, (5, 2): ERROR}
    for i in (1, 2):
        board.deliver(sweep(n=N, at=T0 + timedelta(seconds=600 * i), errors=errors))
    h = board.health()
    pair = next(p for p in h.judgement.pairs if (p.src, p.dst) == (2, 5))
    assert pair.verdict is Verdict.DOWN and pair.explained_by is None
    assert set(_gpu_verdicts(h).values()) == {Verdict.HEALTHY}  # the pair's fault, no GPU's
    assert "kept apart from GPU5 (a pair fault: its other peers work)" in h.gpus[2].reason
    pages = {(r, g, p) for r, g, p in board.active() if r != "ProbeFailing"}
    assert pages == {("PairCopiesFailing", "2", "5")}  # one page: not per GPU or direction
    assert board.offered() == list(range(N))  # both offered ...
    with board.sessions() as s:
        host = schedulable(s, 1)[0][0]
    assert host.apart == [(2, 5)]  # ... never together
    assert host.cuda_visible_devices == "0,1,2,3,4,6,7"


def _p2p_lost(report: Report, a: int, b: int) -> Report:
    lost = {c: P2PStatus.NOT_SUPPORTED for c in (P2PCap.READ, P2PCap.WRITE, P2PCap.NVLINK)}
    pairs = [p.model_copy(update={"p2p": lost, "can_access_peer": False})
             if {p.src, p.dst} == {a, b} else p for p in report.inventory.pairs]
    return _with(report, pairs=pairs)


def test_p2p_unsupported_pages_p2p_access_lost_not_peer_copies_failing(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    board = Board(sessions, sqlite_settings)
    board.deliver(sweep(n=N, at=T0))
    for i in (1, 2):
        report = sweep(n=N, at=T0 + timedelta(seconds=600 * i),
                       errors={(0, 1): ERROR, (1, 0): ERROR})
        board.deliver(_p2p_lost(report, 0, 1))
    active = board.active()
    assert {(r, g, p) for r, g, p in active if r == "P2PAccessLost"} == {
        ("P2PAccessLost", "0", "1"), ("P2PAccessLost", "1", "0")}
    assert not any(r in ("PeerCopiesFailing", "PairCopiesFailing") for r, _, _ in active), \
        active
    h = board.health()
    assert "peer copies fail" not in h.gpus[0].reason
    assert board.offered() == list(range(N))  # a pair fault: both ends offered, apart
    with board.sessions() as s:
        assert schedulable(s, 1)[0][0].apart == [(0, 1)]


def _fabric(report: Report, gpu: int, state: str) -> Report:
    gpus = [g.model_copy(update={"switch_fabric": g.switch_fabric.model_copy(
        update={"state": state})}) if g.index == gpu and g.switch_fabric else g
        for g in report.inventory.gpus]
    return _with(report, gpus=gpus)


def test_a_fabric_in_progress_makes_every_pair_through_it_untrusted(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """Its copies measured fine, yet none of its 14 pairs reads healthy anywhere; its own
    failing copies would be NVSwitchFabricNotReady's page, never PeerCopiesFailing's."""
    board = Board(sessions, sqlite_settings)
    board.deliver(sweep(n=N, at=T0))
    for i in range(1, 4):  # 120 s for NVSwitchFabricNotReady
        board.deliver(_fabric(sweep(n=N, at=T0 + timedelta(seconds=100 * i)), 6, "in_progress"))
    h = board.health()
    through = [p for p in h.judgement.pairs if 6 in (p.src, p.dst)]
    assert len(through) == 14
    for p in through:
        assert p.verdict is Verdict.DEGRADED and p.explained_by == 6
        assert f"GPU{p.src}->GPU{p.dst} not trusted: GPU6 fabric in progress" in p.reason
    view = health_view(h)  # the API's /health answer
    assert {p.verdict for p in view.pairs if 6 in (p.src, p.dst)} == {Verdict.DEGRADED}
    cells = board.cells()
    assert {v for k, v in cells.items() if 6 in k} == {Verdict.DEGRADED}
    assert {v for k, v in cells.items() if 6 not in k} == {Verdict.HEALTHY}
    assert board.offered() == [0, 1, 2, 3, 4, 5, 7]
    assert {(r, g) for r, g, _ in board.active()} == {("NVSwitchFabricNotReady", "6")}
    failing = _fabric(sweep(n=N, at=T0 + timedelta(seconds=400), errors=_failing_with(6)),
                      6, "in_progress")
    board.deliver(failing)
    board.deliver(_fabric(sweep(n=N, at=T0 + timedelta(seconds=500), errors=_failing_with(6)),
                          6, "in_progress"))
    gpu_alerts = {(r, g) for r, g, _ in board.active() if g is not None}
    assert gpu_alerts == {("NVSwitchFabricNotReady", "6")}, gpu_alerts
    assert board.offered() == [0, 1, 2, 3, 4, 5, 7]


def test_a_down_link_makes_the_pairs_through_its_gpu_untrusted(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    board = Board(sessions, sqlite_settings)
    board.deliver(sweep(n=N, at=T0))
    board.deliver(sweep(n=N, at=T0 + timedelta(seconds=120), down_links=[(2, 7)]))
    h = board.health()
    for p in (p for p in h.judgement.pairs if 2 in (p.src, p.dst)):
        assert p.verdict is not Verdict.HEALTHY and p.explained_by == 2, p.reason
        assert "GPU2 has 17/18 NVLinks up" in p.reason
    assert {v for k, v in board.cells().items() if 2 in k} <= {Verdict.DEGRADED,
                                                                 Verdict.DOWN}
    assert board.offered() == [0, 1, 3, 4, 5, 6, 7]


def test_an_unlisted_port_counts_against_the_designed_links_everywhere(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    board = Board(sessions, sqlite_settings)
    board.deliver(sweep(n=N, at=T0))
    for i in (1, 2, 3):  # NVLinkWidthReduced holds for 60 s
        report = sweep(n=N, at=T0 + timedelta(seconds=40 * i), kind=ReportKind.INVENTORY)
        board.deliver(_with(report, nvlinks=[p for p in report.inventory.nvlinks
                                             if (p.gpu, p.link) != (4, 17)]))
    assert ("NVLinkWidthReduced", "4", None) in board.active()
    h = board.health()
    gpu4 = h.gpus[4]
    assert gpu4.verdict is Verdict.DEGRADED and "17/18 NVLinks up" in gpu4.reason, gpu4.reason
    assert "17/17" not in gpu4.reason
    assert h.judgement.verdict is Verdict.DEGRADED
    assert 4 not in board.offered()
