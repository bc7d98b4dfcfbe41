"""Which jobs held some GPUs over a time, in words a verdict's reason can end with (pure).

"GPU2->GPU5 ce_write 310 GB/s, 62% of expected, for 25 min; low since 02:10 UTC, during
job 4711", "GPU3: 2 NVLinks down; held by job 81252": the operator's first question after a
fault is which job it hit. Only jobs whose span (`app/store/tables/jobs.py`) overlaps the time are
named; with no spans nothing is said.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol, TypeVar

from peerwatch.app.analysis.health import PairJudgement, TestJudgement
from peerwatch.app.analysis.verdict import Verdict

MAX_NAMED = 3  # "during jobs 1, 2, 3 and 4 more"
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class JobSpan:
    gpu: int
    job: str
    source: str
    first_seen: datetime
    last_seen: datetime


def jobs_during(spans: Iterable[JobSpan], gpus: Iterable[int], start: datetime,
                end: datetime) -> list[str]:
    """The jobs on any of `gpus` at some time in [start, end], earliest first."""
    wanted = set(gpus)
    hit = [s for s in spans if s.gpu in wanted and s.first_seen <= end and s.last_seen >= start]
    return list(dict.fromkeys(s.job for s in sorted(hit, key=lambda s: (s.first_seen, s.job))))


def during_text(jobs: Sequence[str]) -> str:
    """'' for none, 'during job 4711', 'during jobs 4711 and 4712', '... and 2 more'."""
    if not jobs:
        return ""
    if len(jobs) == 1:
        return f"during job {jobs[0]}"
    shown = list(jobs[:MAX_NAMED])
    rest = len(jobs) - len(shown)
    if rest:
        return f"during jobs {', '.join(shown)} and {rest} more"
    return f"during jobs {', '.join(shown[:-1])} and {shown[-1]}"


def job_note(spans: Sequence[JobSpan], gpus: Iterable[int], since: datetime,
             until: datetime) -> str:
    """'; low since 02:10 UTC, during job 4711', or '' when no job held the GPUs then."""
    text = during_text(jobs_during(spans, gpus, since, until))
    return f"; low since {since:%H:%M} UTC, {text}" if text else ""


def with_job_notes(tests: dict[K, TestJudgement], spans: Sequence[JobSpan]
                   ) -> dict[K, TestJudgement]:
    """Each low (pair, test) with the jobs that held its GPUs from when it went low to its
    newest value, named at the end of its reason; the rest as they were."""
    if not spans:
        return tests
    out = dict(tests)
    for key, t in tests.items():
        if t.low_since is None or t.value_at is None:
            continue
        note = job_note(spans, {t.src, t.dst}, t.low_since, t.value_at)
        if note:
            out[key] = replace(t, reason=t.reason + note)
    return out


class _OnGpu(Protocol):
    """A GPU's or a link's judgement (frozen dataclasses, so read-only here)."""

    @property
    def gpu(self) -> int: ...
    @property
    def verdict(self) -> Verdict: ...
    @property
    def reason(self) -> str: ...


G = TypeVar("G", bound=_OnGpu)


def with_holders(items: Sequence[G], spans: Sequence[JobSpan], at: datetime | None) -> list[G]:
    """Each degraded or down GPU or link with the jobs holding its GPU at `at` (the newest
    report) at the end of its reason: "GPU3: 2 NVLinks down ...; held by job 81252"."""
    out = list(items)
    if not spans or at is None:
        return out
    for i, item in enumerate(items):
        if item.verdict not in (Verdict.DEGRADED, Verdict.DOWN):
            continue
        jobs = jobs_during(spans, (item.gpu,), at, at)
        if jobs:
            held = during_text(jobs).removeprefix("during ")
            out[i] = replace(item, reason=f"{item.reason}; held by {held}")  # type: ignore[type-var]
    return out


def with_fault_jobs(pairs: Sequence[PairJudgement], spans: Sequence[JobSpan],
                    starts: Mapping[tuple[int, int], datetime]) -> list[PairJudgement]:
    """Each bad pair with the jobs that held its GPUs when its trouble began (`starts`):
    "; bad since 02:10 UTC, during job 4711" ends its reason (unless a test's note says it
    already), and ", during job 4711" its cause where it has one (explained by a GPU, P2P
    lost): the pair fault's page and /health's `cause` name the job, as test reasons do."""
    if not spans:
        return list(pairs)
    out = []
    for p in pairs:
        start = starts.get((p.src, p.dst))
        text = during_text(jobs_during(spans, (p.src, p.dst), start, start)) if start else ""
        if not text or p.verdict not in (Verdict.DEGRADED, Verdict.DOWN):
            out.append(p)
            continue
        reason = p.reason if text in p.reason else f"{p.reason}; bad since {start:%H:%M} " \
                                                   f"UTC, {text}"
        cause = p.cause if p.cause is None or text in p.cause else f"{p.cause}, {text}"
        out.append(replace(p, reason=reason, cause=cause))
    return out
