"""The old judgement of every (pair, test), kept only as the equivalence test's oracle: each
key judged from the samples of its look-back window re-read from history, against a baseline
recomputed from history as ingest did (`services/baselines.py` before the running state, at
its most exact: every measured key refreshed at every sweep), the low runs' starts carried
from the oracle's own previous judgement. The rules added since are applied the same way
on its own figures: the change test (`pair_tests.with_step`, on its window and baseline) and
a GPU's Xid 79 making its keys unknown (its events judged from the stored facts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from peerwatch.app.analysis.baseline import healthy_values, robust_baseline
from peerwatch.app.analysis.change_point import StepRule
from peerwatch.app.analysis.health import BaselineRef, Sample, TestJudgement, judge_test
from peerwatch.app.analysis.off_bus import off_bus_gpus
from peerwatch.app.analysis.xid_judge import judge_events
from peerwatch.app.judging.judge import _unknown_without_gpu
from peerwatch.app.judging.load import baseline_values
from peerwatch.app.judging.pair_tests import with_step
from peerwatch.app.queries.common import pair_samples
from peerwatch.app.queries.events import load_event_facts
from peerwatch.app.records.fabric import HostFabric
from peerwatch.app.records.keys import PairKey
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import GPU_TESTS


def _at_full_width(fabric: HostFabric, src: int, dst: int) -> bool:
    pair = fabric.pairs.get((src, dst))
    return pair is None or pair.nvlink_width >= fabric.full_width(src, dst)[0]


@dataclass
class Oracle:
    """The history-reading judgement, with what it carried between two judgements."""

    settings: Settings
    baselines: dict[PairKey, float] = field(default_factory=dict)
    low_before: dict[PairKey, datetime] = field(default_factory=dict)
    last: dict[PairKey, TestJudgement] = field(default_factory=dict)

    def _refresh(self, session: Session, fabric: HostFabric, keys: set[PairKey],
                 at: datetime) -> None:
        s = self.settings
        keys = {k for k in keys if _at_full_width(fabric, k[0], k[1])}
        values = baseline_values(session, fabric.host.id, keys,
                                 at - timedelta(seconds=s.baseline_window_s), at,
                                 s.baseline_max_samples)
        for key in keys:
            expect = fabric.expectation(key[2], key[0], key[1])
            kept = healthy_values(key[2], [v for _, v in values.get(key, [])],
                                  expect.value if expect else None, s.degraded_ratio_expected)
            stats = robust_baseline(kept, s.baseline_min_samples)
            if stats is not None:
                self.baselines[key] = stats.value

    def judge(self, session: Session, row: Host, fabric: HostFabric,
              now: datetime, sweep: bool = True) -> dict[PairKey, TestJudgement]:
        """After a sweep, judged from history; else the last verdicts reused, as the old
        judgement did (only a GPU gone from the inventory makes its keys unknown)."""
        off_bus = off_bus_gpus(judge_events(load_event_facts(session, row.id, now), now))
        if not sweep:
            self.last = _unknown_without_gpu(fabric, self.last, off_bus)
            self.low_before = {k: t.low_since for k, t in self.last.items()
                               if t.low_since is not None}
            return self.last
        s = self.settings
        newest = row.last_sweep_at or row.last_report_at or now
        lookback = max(s.health_lookback_s, 2 * s.degraded_sustain_s)
        samples = pair_samples(session, row.id, newest - timedelta(seconds=lookback))
        self._refresh(session, fabric, {k for k, ss in samples.items()
                                        if any(x.judged for x in ss)}, newest)
        self.last = _unknown_without_gpu(fabric, self._judge_tests(fabric, samples), off_bus)
        self.low_before = {k: t.low_since for k, t in self.last.items()
                           if t.low_since is not None}
        return self.last

    def _judge_tests(self, fabric: HostFabric, samples: dict[PairKey, list[Sample]]
                     ) -> dict[PairKey, TestJudgement]:
        tests = sorted({k[2] for k in samples}, key=lambda t: t.value)
        keys = set(samples) | {(s, d, t) for (s, d) in fabric.pairs for t in tests
                               if t not in GPU_TESTS}
        keys |= {(g, g, t) for g in fabric.gpus for t in tests if t in GPU_TESTS}
        window = self.settings.baseline_window_s
        out = {}
        for (s, d, t) in sorted(keys, key=lambda k: (k[0], k[1], k[2].value)):
            base = self.baselines.get((s, d, t))
            before = self.low_before.get((s, d, t))
            judged = judge_test(s, d, t, samples.get((s, d, t), []),
                                fabric.full_expectation(t, s, d),
                                BaselineRef(base, window) if base is not None else None,
                                self.settings.thresholds, before)
            kept = [x for x in samples.get((s, d, t), []) if x.judged][
                -self.settings.intermittent_of:]  # the judged values the state keeps
            out[(s, d, t)] = with_step(judged, kept, (base, 0.0, 0) if base else None,
                                       StepRule(), before is not None)
        return out
