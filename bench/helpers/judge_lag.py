"""The judge lag of a stretch of a run, from each replica's `peerwatch_judge_lag_seconds`
histogram read at its start and its end.

`/readyz`'s p99 is over a replica's last 2,048 judgements, which after a fleet's warm-up
are mostly the warm-up's backlog (every host's first reports at once): a figure of the
catch-up, not of the cadence the fleet then runs at. The histogram's counts at the end less
those at the start are exactly the judgements made in between.
"""

from __future__ import annotations

import re

import httpx

BUCKET = re.compile(r'^peerwatch_judge_lag_seconds_bucket\{le="([^"]+)"\} (\S+)$', re.M)

Buckets = dict[float, float]  # upper bound -> judgements at or under it (cumulative)


def lag_buckets(base: str) -> Buckets:
    """One replica's cumulative lag buckets now."""
    text = httpx.get(f"{base}/metrics", timeout=120).text
    return {float(le): float(count) for le, count in BUCKET.findall(text)}


def lag_quantile(before: Buckets, after: Buckets, q: float = 0.99) -> float | None:
    """The upper bound of the bucket holding the q-quantile of the judgements made between
    the two readings (inf: beyond the last bound; None: no judgement)."""
    made = {le: after[le] - before.get(le, 0.0) for le in after}
    total = made.get(float("inf"), 0.0)
    if total <= 0:
        return None
    return next(le for le in sorted(made) if made[le] >= q * total)
