"""Which job held which GPU, read: a host's spans for judging, the spans beside a
pair's series, and a job's page (the GPUs it held and what went wrong while it ran)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, or_, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.jobs import JobSpan
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.queries.common import NotFound
from peerwatch.app.schemas.jobs import JobAlertOut, JobOut, JobSpanOut, JobVerdictOut
from peerwatch.app.store.tables.alerts import Alert
from peerwatch.app.store.tables.fleet import JobSnapshot
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.jobs import GpuJobSpan
from peerwatch.app.store.tables.judged import (
    JudgedGpu,
    JudgedHost,
    JudgedLink,
    JudgedPair,
    JudgedTest,
)

MAX_LISTED = 500  # alerts or verdicts on one job's page


_SPANS = select(GpuJobSpan).where(
    GpuJobSpan.host_id == bindparam("host"), GpuJobSpan.last_seen >= bindparam("since"),
    GpuJobSpan.first_seen <= bindparam("until")).order_by(GpuJobSpan.first_seen)


def host_spans(session: Session, host_id: int, since: datetime, until: datetime,
               gpus: Iterable[int] | None = None) -> list[JobSpan]:
    """The spans of `host_id` overlapping [since, until] (of `gpus` only, when given)."""
    params = {"host": host_id, "since": since, "until": until}
    if gpus is None:  # every judgement's read: built once
        rows = session.scalars(_SPANS, params)
    else:
        rows = session.scalars(_SPANS.where(GpuJobSpan.gpu.in_(list(gpus))), params)
    return [JobSpan(r.gpu, r.job, r.source, r.first_seen, r.last_seen) for r in rows]


def pair_jobs(session: Session, host: Host, gpus: Iterable[int], since: datetime,
              until: datetime) -> list[JobSpanOut]:
    """The jobs on a pair's GPUs within a series' range (the dashboard marks them)."""
    return [JobSpanOut(host=host.name, gpu=s.gpu, job=s.job, source=s.source,
                       first_seen=s.first_seen, last_seen=s.last_seen)
            for s in host_spans(session, host.id, since, until, gpus)]


def job_page(session: Session, job: str) -> JobOut:
    """Every GPU `job` held, the alerts active on them while it ran and the verdicts that
    began before it ended; NotFound when neither a report's job mapping nor a job snapshot
    ever named it (a job from before the mapping was reported still has its snapshots)."""
    rows = session.execute(
        select(GpuJobSpan, Host.name).join(Host, Host.id == GpuJobSpan.host_id)
        .where(GpuJobSpan.job == job).order_by(Host.name, GpuJobSpan.gpu)).all()
    held = [JobSpanOut(host=name, gpu=s.gpu, job=s.job, source=s.source,
                       first_seen=s.first_seen, last_seen=s.last_seen) for s, name in rows]
    held += _snapshot_spans(session, job, {h.host for h in held})
    if not held:
        raise NotFound("job", job)
    start, end = min(h.first_seen for h in held), max(h.last_seen for h in held)
    gpus: dict[str, set[int]] = defaultdict(set)
    for h in held:
        gpus[h.host].add(h.gpu)
    host_ids = dict(session.execute(
        select(Host.name, Host.id).where(Host.name.in_(list(gpus)))).all())
    return JobOut(job=job, first_seen=start, last_seen=end, hosts=sorted(gpus), held=held,
                  alerts=_alerts(session, gpus, start, end),
                  verdicts=_verdicts(session, host_ids, gpus, end))


def _snapshot_spans(session: Session, job: str, mapped: set[str]) -> list[JobSpanOut]:
    """The GPUs in the job's snapshots on hosts whose job mapping never named it, from its
    first snapshot to its last (source "snapshots")."""
    snaps = session.scalars(select(JobSnapshot).where(JobSnapshot.job_id == job)
                            .order_by(JobSnapshot.host, JobSnapshot.taken_at)).all()
    by_host: dict[str, list[JobSnapshot]] = defaultdict(list)
    for snap in snaps:
        if snap.host not in mapped:
            by_host[snap.host].append(snap)
    out = []
    for host, taken in sorted(by_host.items()):
        indexes = sorted({g.get("index") for s in taken for g in s.body.get("inventory", {})
                          .get("gpus", []) if isinstance(g.get("index"), int)})
        out += [JobSpanOut(host=host, gpu=gpu, job=job, source="snapshots",
                           first_seen=taken[0].taken_at, last_seen=taken[-1].taken_at)
                for gpu in indexes]
    return out


def _concerns(labels: dict[str, Any], gpus: set[int]) -> bool:
    """An alert of the whole host, or naming one of the job's GPUs."""
    named = [labels[k] for k in ("gpu", "peer_gpu") if k in labels]
    return not named or any(str(g) in named for g in gpus)


def _alerts(session: Session, gpus: dict[str, set[int]], start: datetime,
            end: datetime) -> list[JobAlertOut]:
    rows = session.scalars(
        select(Alert).where(Alert.host.in_(list(gpus)), Alert.active_since <= end,
                            or_(Alert.resolved_at.is_(None), Alert.resolved_at >= start))
        .order_by(Alert.active_since).limit(MAX_LISTED))
    return [JobAlertOut(id=a.id, rule=a.rule, state=a.state, host=a.host, labels=a.labels,
                        summary=(a.annotations or {}).get("summary"),
                        active_since=a.active_since, resolved_at=a.resolved_at)
            for a in rows if a.host and _concerns(a.labels, gpus[a.host])]


def _verdicts(session: Session, host_ids: dict[str, int], gpus: dict[str, set[int]],
              end: datetime) -> list[JobVerdictOut]:
    out: list[JobVerdictOut] = []
    names = {v: k for k, v in host_ids.items()}
    bad = [Verdict.DEGRADED.value, Verdict.DOWN.value]
    models: tuple[tuple[str, Any], ...] = (
        ("host", JudgedHost), ("gpu", JudgedGpu), ("link", JudgedLink), ("pair", JudgedPair),
        ("test", JudgedTest))
    for kind, model in models:
        rows = session.scalars(select(model).where(
            model.host_id.in_(list(names)), model.verdict.in_(bad), model.since <= end)
            .limit(MAX_LISTED))
        for r in rows:
            key = _key(kind, r)
            held = gpus[names[r.host_id]]
            if {v for k, v in key.items() if k in ("gpu", "src", "dst")} & held or not key:
                out.append(JobVerdictOut(host=names[r.host_id], kind=kind, key=key,
                                         verdict=Verdict(r.verdict), reason=r.reason,
                                         since=r.since))
    return sorted(out, key=lambda v: (v.since, v.host, v.kind))[:MAX_LISTED]


def _key(kind: str, row: Any) -> dict[str, Any]:
    fields = {"host": (), "gpu": ("gpu",), "link": ("gpu", "link"), "pair": ("src", "dst"),
              "test": ("src", "dst", "test")}[kind]
    return {f: getattr(row, f) for f in fields}
