"""`app/analysis/xid_attribution.py` and `jobs.with_fault_jobs` over hand-built judgements:
which Xid explains a bad pair, which leaves it a pair fault (and says why), and the job named
when the trouble began."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from peerwatch.app.analysis.attribution import pair_facts
from peerwatch.app.analysis.health import PairJudgement, Sample, TestJudgement
from peerwatch.app.analysis.jobs import JobSpan, with_fault_jobs
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.analysis.xid_attribution import LEAD_S, explain_by_events
from peerwatch.app.analysis.xid_catalog import CATALOG, P2P_XIDS, lookup
from peerwatch.app.analysis.xid_judge import EventFinding
from peerwatch.probes.report import TestName

T = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
ERROR = "CUDA error: an illegal memory access was encountered"


def failing(src: int, dst: int, at: datetime = T) -> PairJudgement:
    test = TestJudgement(Verdict.DOWN, f"GPU{src}->GPU{dst} ce_write failed again: {ERROR}",
                         src, dst, TestName.CE_WRITE, latest=Sample(at, None, error=ERROR))
    return PairJudgement(Verdict.DOWN, test.reason, src, dst, (test,))


def slow(src: int, dst: int, since: datetime = T) -> PairJudgement:
    test = TestJudgement(Verdict.DEGRADED, f"GPU{src}->GPU{dst} ce_write 0.50 of expected",
                         src, dst, TestName.CE_WRITE, latest=Sample(since, 1e11),
                         low_since=since, value=1e11, value_at=since)
    return PairJudgement(Verdict.DEGRADED, test.reason, src, dst, (test,))


def xid(code: int, gpu: int, at: datetime = T, level: str = "fault") -> EventFinding:
    return EventFinding(lookup("xid", code), level, 1, at, at, gpu=gpu)  # type: ignore[arg-type]


def test_one_end_with_a_p2p_xid_explains_the_pair_and_is_the_gpu_at_fault() -> None:
    pairs = [failing(0, 1), failing(1, 0)]  # a 2-GPU board: no pattern can tell
    got = explain_by_events(pairs, [xid(79, 1, T - timedelta(minutes=2))], {})
    for p in got.pairs:
        assert (p.explained_by, p.by_event) == (1, True)
        assert p.cause == "GPU1: Xid 79 at 01:58 UTC (GPU has fallen off the bus)"
        assert p.reason.startswith(f"GPU{p.src}->GPU{p.dst} explained by GPU1: Xid 79 at "
                                   "01:58 UTC")
        assert pair_facts(p) == {"explained_by": 1, "cause": p.cause, "by_event": 1}
    assert got.explained == {(0, 1), (1, 0)}
    fault = got.gpus[1]
    assert fault.failing and fault.text == ("copies fail with GPU0 after Xid 79 at 01:58 UTC "
                                            "(GPU has fallen off the bus)")
    assert set(got.gpus) == {1}


def test_a_warning_level_nvlink_xid_explains_a_slow_pair() -> None:
    got = explain_by_events([slow(3, 5)], [xid(74, 3, T + timedelta(minutes=5), "warning")],
                            {})
    (p,) = got.pairs
    assert p.explained_by == 3 and p.cause is not None and "Xid 74" in p.cause
    assert not got.gpus[3].failing and got.gpus[3].text.startswith("copies run slow with GPU5")


def test_both_ends_with_p2p_xids_stay_a_pair_fault_and_say_so() -> None:
    (p,) = explain_by_events([failing(2, 5)], [xid(48, 2), xid(95, 5)], {}).pairs
    assert p.explained_by is None and p.cause is None
    assert p.reason.endswith("; not blamed on either GPU: both logged Xids then (GPU2 Xid 48; "
                             "GPU5 Xid 95), a pair fault")


def test_an_xid_that_says_nothing_about_p2p_leaves_a_pair_fault_and_says_so() -> None:
    got = explain_by_events([failing(2, 5)], [xid(13, 2, level="warning")], {})
    (p,) = got.pairs
    assert p.explained_by is None and not got.gpus
    assert p.reason.endswith("; GPU2's Xid 13 at 02:00 UTC (Graphics engine exception) says "
                             "nothing about P2P: a pair fault")


def test_a_non_p2p_xid_at_the_other_end_does_not_stop_the_blame() -> None:
    (p,) = explain_by_events([failing(2, 5)], [xid(13, 2, level="warning"), xid(94, 5)],
                             {}).pairs
    assert p.explained_by == 5


def test_an_xid_outside_the_window_of_the_bad_measurements_explains_nothing() -> None:
    long_before = T - timedelta(seconds=LEAD_S + 60)
    (p,) = explain_by_events([failing(0, 1)], [xid(79, 1, long_before)], {}).pairs
    assert p.explained_by is None and p.reason == failing(0, 1).reason
    # the stored start of the trouble keeps the window: an old failure run, a newer Xid
    started = T - timedelta(hours=1)
    (p,) = explain_by_events([failing(0, 1)], [xid(79, 1, started)], {(0, 1): started}).pairs
    assert p.explained_by == 1


def test_pairs_explained_already_or_with_a_cause_of_their_own_are_left_alone() -> None:
    lost = PairJudgement(Verdict.DOWN, "P2P unsupported", 0, 1, (), cause="P2P unavailable")
    untrusted = PairJudgement(Verdict.DEGRADED, "not trusted", 0, 2, (), explained_by=2,
                              cause="GPU2 fabric in progress")
    got = explain_by_events([lost, untrusted], [xid(79, 0), xid(79, 1)], {})
    assert got.pairs == (lost, untrusted) and not got.gpus


def test_the_catalog_marks_the_classes_that_bear_on_p2p() -> None:
    assert {79, 48, 94, 95, 74, 119, 120} <= P2P_XIDS
    assert not {13, 31, 43, 45, 61, 63, 92} & P2P_XIDS
    assert not any(e.p2p for e in CATALOG.values() if e.kind == "sxid")


def test_a_pair_names_the_job_that_held_its_gpus_when_its_trouble_began() -> None:
    spans = [JobSpan(0, "4711", "mapping_dir", T - timedelta(hours=1), T + timedelta(hours=1)),
             JobSpan(1, "4711", "mapping_dir", T - timedelta(hours=1), T + timedelta(hours=1)),
             JobSpan(3, "9000", "mapping_dir", T - timedelta(hours=1), T + timedelta(hours=1))]
    explained = explain_by_events([failing(0, 1)], [xid(79, 1)], {}).pairs[0]
    own, elsewhere = failing(1, 0), failing(2, 5)
    got = with_fault_jobs([explained, own, elsewhere], spans, {(0, 1): T, (1, 0): T,
                                                              (2, 5): T})
    assert got[0].cause == "GPU1: Xid 79 at 02:00 UTC (GPU has fallen off the bus), during " \
                           "job 4711"
    assert got[1].reason.endswith("; bad since 02:00 UTC, during job 4711")
    assert got[1].cause is None  # a pair fault speaks for itself
    assert got[2] == elsewhere  # no job held GPU2 or GPU5
    noted = slow(0, 1)
    noted = PairJudgement(noted.verdict, noted.reason + "; low since 02:00 UTC, during job "
                          "4711", 0, 1, noted.tests)
    assert with_fault_jobs([noted], spans, {(0, 1): T})[0].reason == noted.reason  # once
