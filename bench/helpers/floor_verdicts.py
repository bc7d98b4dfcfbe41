"""The floor's verdicts above the (pair, test): pairs, GPUs, NVLink ports and the host.

What the project judges at every level, reduced to its least arithmetic, so that the floor
(`floor.py`) is held to the same work: each (pair, test) a verdict (its k-of-n low window,
a failure down when the attempt before failed too, contended samples not judged); each
pair the worst of its tests; each NVLink port down when the inventory says so, degraded
when its error counters grew between the report's counter samples; each GPU the worst of
its own tests and its ports; the host the worst of everything. Only the verdicts that
changed are written back (`changed`). Pure: values in, values out.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from peerwatch.probes.report import Report

HEALTHY, UNKNOWN, DEGRADED, DOWN = 0, 1, 2, 3  # severity order, as stored
WINDOW, K_OF_N, LOW_BELOW, ALPHA = 6, 3, 0.8, 0.1
PAIR, GPU_TESTS, LINK, GPU, HOST = 0, 1, 2, 3, 4  # the kinds of `floor_verdicts` rows
FAILED = 1 << WINDOW  # beside the low flags: the newest attempt failed

Key = tuple[int, int, int]  # (kind, a, b)
State = list[Any]  # expected, baseline, flags, low_since, value, verdict


def judge_result(test: str, value: float | None, contended: bool, error: str | None,
                 state: State | None, at: datetime) -> State:
    """One key's state after one result: the k-of-n window of low flags, the running
    baseline, the verdict."""
    if state is None:
        state = [value or 0.0, value or 0.0, 0, None, None, UNKNOWN]
    expected, baseline, flags, low_since, last, verdict = state
    if error is not None:
        verdict = DOWN if flags & FAILED or last is None else DEGRADED
        return [expected, baseline, flags | FAILED, low_since, last, verdict]
    if contended or value is None:
        return state  # other traffic on the link: kept, not judged
    reference = min(expected, baseline)
    ratio = (reference / value) if test == "latency" else value / (reference or 1.0)
    low = ratio < LOW_BELOW
    flags = ((flags << 1) | low) & (FAILED - 1)
    degraded = bin(flags).count("1") >= K_OF_N
    low_since = (low_since or at) if degraded else None
    if not low:
        baseline += ALPHA * (value - baseline)
    return [expected, baseline, flags, low_since, value, DEGRADED if degraded else HEALTHY]


def link_verdicts(report: Report) -> dict[Key, int]:
    """Each NVLink port: down when not up, degraded when its error counters grew between
    the report's oldest and newest counter samples."""
    grew: dict[tuple[int, int], int] = {}
    if len(report.counters) >= 2:
        first, last = report.counters[0], report.counters[-1]
        before = {(p.gpu, p.link): (p.replay or 0) + (p.recovery or 0) + (p.crc_flit or 0)
                  for p in first.links}
        for p in last.links:
            now = (p.replay or 0) + (p.recovery or 0) + (p.crc_flit or 0)
            grew[(p.gpu, p.link)] = now - before.get((p.gpu, p.link), now)
    return {(LINK, p.gpu, p.link): DOWN if p.state != "up" else
            DEGRADED if grew.get((p.gpu, p.link), 0) > 0 else HEALTHY
            for p in report.inventory.nvlinks}


def levels(report: Report, tests: dict[tuple[int, int, str], int] | None,
           stored: dict[Key, int]) -> dict[Key, int]:
    """Every verdict above the tests: from this sweep's test verdicts (`tests`: key ->
    verdict), or, for an inventory report (None), the pair and per-GPU verdicts stored."""
    out: dict[Key, int] = {}
    if tests is None:
        out.update({k: v for k, v in stored.items() if k[0] in (PAIR, GPU_TESTS)})
    else:
        for (src, dst, _), verdict in tests.items():
            key = (GPU_TESTS, src, src) if src == dst else (PAIR, src, dst)
            out[key] = max(out.get(key, HEALTHY), verdict)
    links = link_verdicts(report)
    out.update(links)
    worst: dict[int, int] = defaultdict(int)
    for (kind, a, _), verdict in (*links.items(), *out.items()):
        if kind in (LINK, GPU_TESTS):
            worst[a] = max(worst[a], verdict)
    for gpu in report.inventory.gpus:
        out[(GPU, gpu.index, gpu.index)] = worst[gpu.index]
    out[(HOST, 0, 0)] = max(out.values(), default=UNKNOWN)
    return out


def changed(new: dict[Key, int], stored: dict[Key, int]) -> list[tuple[int, int, int, int]]:
    """The verdict rows to write: those new or changed since `stored`."""
    return [(*key, verdict) for key, verdict in new.items() if stored.get(key) != verdict]
