"""This replica's judge queue on `/metrics`: how far behind the reports its verdicts are.

`peerwatch_judge_lag_seconds` (histogram: a report's arrival to its stored verdict, one
observation per judgement, from the oldest report it covers), and read at scrape time from
the queue: `peerwatch_judge_queue_depth` (hosts waiting), `peerwatch_judge_in_progress`,
`peerwatch_judge_lag_recent_seconds{stat}` (p50/p99/max over the last judgements, the
figures `/readyz` shows), `peerwatch_judge_failures_total` and
`peerwatch_judge_process_restarts_total`. Under `serve` the judging runs in a process of its
own, which sends these figures to the server (`app/judging/process.py`).
Registered in the app's own registry beside the ingest counters (`app/exposition/ingest.py`),
never the global one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from peerwatch.app.judging.queue import QueueLoad

# Seconds: a quiet server judges within ~0.1 s; past a minute the fleet outruns it.
LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0)


class JudgeQueueCollector(Collector):
    """Depth, in-progress, recent lag quantiles and failures, read from the queue at scrape."""

    def __init__(self, load: Callable[[], QueueLoad]) -> None:
        self._load = load

    def collect(self) -> Iterator[Metric]:
        load = self._load()
        yield GaugeMetricFamily("peerwatch_judge_queue_depth",
                                "Hosts with a stored report waiting for their judgement.",
                                value=load.depth)
        yield GaugeMetricFamily("peerwatch_judge_in_progress",
                                "Hosts being judged by this replica now.", value=load.in_flight)
        recent = GaugeMetricFamily(
            "peerwatch_judge_lag_recent_seconds", "Report arrival to stored verdict over this "
            "replica's recent judgements (stat p50, p99, max).", labels=["stat"])
        for q, value in (("p50", load.lag_p50_s), ("p99", load.lag_p99_s),
                         ("max", load.lag_max_s)):
            if value is not None:
                recent.add_metric([q], value)
        yield recent
        yield CounterMetricFamily("peerwatch_judge_failures",
                                  "Judgements that failed here (left to the periodic round).",
                                  value=load.failed)
        yield CounterMetricFamily("peerwatch_judge_process_restarts",
                                  "Times this server's judge process died and was restarted.",
                                  value=load.restarts)


def judge_lag_histogram(registry: CollectorRegistry) -> Histogram:
    return Histogram("peerwatch_judge_lag_seconds",
                     "Report arrival at this replica to its stored verdict, per judgement "
                     "(from the oldest report the judgement covers).",
                     buckets=LAG_BUCKETS, registry=registry)
