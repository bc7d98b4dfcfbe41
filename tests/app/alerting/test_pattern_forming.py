"""No transient pair pages while a GPU pattern forms.

A GPU that falls sick during a sweep goes bad with its peers one pair test at a time (the
tests run in sequence): the pairs measured before the trouble read fine in that sweep, so for
a sweep the GPU is bad with *some* peers, the "bad with every peer" pattern does not hold,
and its bad pairs read as pair faults. Before `app/analysis/pattern_wait.py` they paged (a
PairCopiesFailing per pair with a healthy peer, or a P2PBandwidthDegraded per slow pair)
and resolved a sweep later, when the GPU's own page took over. The histories are built here
(tests/app/factory.py, each result stamped at its place in the sweep); each test also
runs the same history with PEERWATCH_PATTERN_WAIT_S=0 (no hold) to show the transient pages
it is about.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.exposition.collector import PeerwatchCollector
from peerwatch.app.exposition.loader import load_snapshot
from peerwatch.app.queries.health_view import health_view
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import Report, ReportKind, TestName
from tests.app.alerting.test_attribution import ERROR, Board, N
from tests.app.factory import T0, ValueFn, healthy, sweep

SICK = 3
SWEEP_S = 600
Active = set[tuple[str, str | None, str | None]]


def in_sequence(report: Report, step_s: float = 2.0) -> Report:
    """The report's pair results stamped one after another, as a sweep measures them."""
    results = [r.model_copy(update={"started_at": report.started_at
                                    + timedelta(seconds=i * step_s)})
               for i, r in enumerate(report.results)]
    return report.model_copy(update={"results": results})


ORDER = [(s, d) for s in range(N) for d in range(N) if s != d]  # the sweep's order
ONSET = ORDER.index((SICK, 2))  # GPU3 falls sick here: (0,3) (1,3) (2,3) (3,0) (3,1) before


def _after_onset(first: bool) -> Callable[[int, int], bool]:
    """In the first sick sweep only the pairs measured from the onset on are hit."""
    return lambda s, d: SICK in (s, d) and (not first or ORDER.index((s, d)) >= ONSET)


def _errors(first: bool) -> dict[tuple[int, int], str]:
    hit = _after_onset(first)
    return {(s, d): ERROR for s, d in ORDER if hit(s, d)}


def _slow(first: bool) -> ValueFn:
    hit = _after_onset(first)

    def value(s: int, d: int, t: TestName) -> float | None:
        v = healthy(s, d, t)
        return v * 0.5 if v is not None and hit(s, d) else v
    return value


def _at(i: int) -> datetime:
    return T0 + timedelta(seconds=SWEEP_S * i)


def _run(sessions: sessionmaker[Session], settings: Settings,
         sick_sweeps: list[Report]) -> tuple[Board, list[Active]]:
    """Two healthy sweeps, then `sick_sweeps`; the active alerts after each sick one."""
    board = Board(sessions, settings)
    for i in range(2):
        board.deliver(in_sequence(sweep(n=N, at=_at(i))))
    seen = []
    for report in sick_sweeps:
        board.deliver(in_sequence(report))
        seen.append(board.active())
    return board, seen


def _on_healthy_peers(active: Active) -> Active:
    """Alerts on a GPU other than the sick one, and pair alerts (a peer_gpu of their own)."""
    return {a for a in active if a[1] is not None
            and (a[1] != str(SICK) or a[2] not in (None, a[1]))}


def _paged(active: Active) -> Active:
    """GPU and pair alerts (ProbeFailing, the host's "tests failed", is no page of a GPU)."""
    return {a for a in active if a[1] is not None}


def _sick_sweeps(how: str) -> list[Report]:
    """Three sweeps of GPU3 sick: its copies failing ("fail") or at half speed ("slow"),
    the first from the onset on only."""
    return [sweep(n=N, at=_at(2 + i), **({"errors": _errors(first=i == 0)} if how == "fail"
                                        else {"value": _slow(first=i == 0)}))
            for i in range(3)]


def _failing_sweeps() -> list[Report]:
    return _sick_sweeps("fail")


def test_a_gpu_failing_mid_sweep_pages_once_and_never_its_peers(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    board, seen = _run(sessions, sqlite_settings, _failing_sweeps())
    for i, active in enumerate(seen):  # no pair page, no page on a healthy peer, ever
        assert _on_healthy_peers(active) == set(), (i, active)
    assert {(r, g) for r, g, _ in seen[1] if g is not None} == {("PeerCopiesFailing", "3")}
    h = board.health()
    assert all(p.explained_by == SICK for p in h.judgement.pairs if SICK in (p.src, p.dst))


def test_the_held_pairs_say_why_in_health_and_metrics(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    board, seen = _run(sessions, sqlite_settings, _failing_sweeps()[:1])
    assert _paged(seen[0]) == set()  # held: no GPU or pair pages yet
    view = health_view(board.health())
    held = {(p.src, p.dst): p.waits_for for p in view.pairs if p.waits_for}
    hit = {k for k in ORDER if _after_onset(True)(*k)}
    assert set(held) == hit  # the failing ones, each with the reason
    assert all(w is not None and "GPU3's pattern" in w and "5 of its 7 peers bad" in w
               for w in held.values()), held
    assert all(p.verdict is not Verdict.HEALTHY for p in view.pairs if (p.src, p.dst) in hit)
    with sessions() as s:
        snap = load_snapshot(s)
    families = PeerwatchCollector(lambda gpus: snap, AlertingSettings()).collect()
    exported = {(x.labels["gpu"], x.labels["peer_gpu"], x.labels["why"])
                for f in families if f.name == "peerwatch_pair_page_held" for x in f.samples}
    assert exported == {(str(s), str(d), "GPU3 pattern forming") for s, d in hit}


def test_without_the_wait_the_same_history_pages_the_healthy_peers(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """The reproduction: no hold (PEERWATCH_PATTERN_WAIT_S=0), transient pages on peers."""
    no_wait = sqlite_settings.model_copy(update={"pattern_wait_s": 0.0})
    _, seen = _run(sessions, no_wait, _failing_sweeps()[:2])
    pair_pages = {(g, p) for r, g, p in seen[0] if r == "PairCopiesFailing"}
    assert {p if g == str(SICK) else g for g, p in pair_pages} >= {"2", "4", "5", "6", "7"}
    assert _on_healthy_peers(seen[1]) == set()  # the pattern took over a sweep later


def _slow_sweeps() -> list[Report]:
    return _sick_sweeps("slow")


def test_a_gpu_slowing_mid_sweep_raises_no_pair_page(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    board, seen = _run(sessions, sqlite_settings, _slow_sweeps())
    for i, active in enumerate(seen):
        assert {r for r, *_ in active} <= {"GPUPeerCopiesSlow"}, (i, active)
    assert {(r, g) for r, g, _ in seen[2]} == {("GPUPeerCopiesSlow", "3")}


def test_without_the_wait_a_slowing_gpu_pages_its_pairs(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """The reproduction: at the second sick sweep the pairs measured after the onset are
    degraded (two low sweeps), the others low once: a page for each of their pairs (one
    per unordered pair), without a hold."""
    no_wait = sqlite_settings.model_copy(update={"pattern_wait_s": 0.0})
    _, unheld = _run(sessions, no_wait, _slow_sweeps()[:2])
    hit = {(str(min(s, d)), str(max(s, d))) for s, d in ORDER if _after_onset(True)(s, d)}
    assert {(g, p) for r, g, p in unheld[1] if r == "P2PBandwidthDegraded"} == hit


def test_a_pair_fault_still_pages_by_the_next_sweep(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """Two GPUs whose other pairs work: the wait lasts until those were measured again."""
    pair = {(2, 5): ERROR, (5, 2): ERROR}
    _, seen = _run(sessions, sqlite_settings,
                   [sweep(n=N, at=_at(i), errors=pair) for i in (2, 3)])
    assert {a for a in seen[1] if a[0] in ("PairCopiesFailing", "PeerCopiesFailing")} == {
        ("PairCopiesFailing", "2", "5")}  # one page for the pair, none at either end


def test_a_hold_ends_after_the_pattern_wait(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    """No sweep comes to settle it: the page goes out once PEERWATCH_PATTERN_WAIT_S passed."""
    short = sqlite_settings.model_copy(update={"pattern_wait_s": 300.0})
    board, seen = _run(sessions, short, _failing_sweeps()[:1])
    assert _paged(seen[0]) == set()
    paged = []
    for k in range(1, 5):  # inventory reports every 2 min: judged again, the hold ages
        board.deliver(sweep(n=N, at=_at(2) + timedelta(seconds=120 * k), tests=(),
                            kind=ReportKind.INVENTORY))
        paged.append(bool({r for r, *_ in board.active() if r == "PairCopiesFailing"}))
    assert paged == [False, False, True, True]
    assert not [p for p in health_view(board.health()).pairs if p.waits_for]
