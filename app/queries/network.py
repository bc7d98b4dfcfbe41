"""Reads of the network: the map, each host pair's recent figures, the pair jobs.

The network judgement is computed from these at read time and by the network evaluation
(app/judging/network.py) alike, so the API, the alerts and `/metrics` agree by construction.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.network import (
    Floors,
    NetworkJudgement,
    PairFigures,
    PairKey,
    Place,
    judge_pairs,
    pair_key,
)
from peerwatch.app.analysis.triangulate import triangulate
from peerwatch.app.queries.common import NotFound
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.network import HostPairResult, NetworkHost, PairJob

WINDOW = timedelta(days=7)  # figures older than this neither judge nor baseline
HISTORY = 20  # figures per pair and test kept for the baseline


def places(session: Session) -> dict[str, Place]:
    return {h.host: Place(h.leaf, h.spine, h.domain, h.line_rate_bps)
            for h in session.scalars(select(NetworkHost))}


def pair_figures(session: Session, now: datetime, test: str | None = None) -> list[PairFigures]:
    """Per unordered pair and test, its figures newest first (either direction), within
    `WINDOW`; a pair whose newest result is an error is failed."""
    query = (select(HostPairResult.host, HostPairResult.peer_host, HostPairResult.test,
                    HostPairResult.value, HostPairResult.measured_at, HostPairResult.error,
                    HostPairResult.job)
             .where(HostPairResult.measured_at >= now - WINDOW)
             .order_by(HostPairResult.measured_at.desc(), HostPairResult.id.desc()))
    if test is not None:
        query = query.where(HostPairResult.test == test)
    rows: dict[tuple[PairKey, str], list[float | None]] = defaultdict(list)
    newest: dict[tuple[PairKey, str], tuple[datetime, str | None, str | None]] = {}
    for host, peer, t, value, at, error, job in session.execute(query):
        values = rows[(pair_key(host, peer), t)]
        newest.setdefault((pair_key(host, peer), t), (at, error, job))
        if len(values) < HISTORY:
            values.append(value)
    out = []
    for (key, t), values in sorted(rows.items()):
        failed = values[0] is None
        at, error, job = newest[(key, t)]
        out.append(PairFigures(key, t, tuple(v for v in values if v is not None), failed,
                               at, error if failed else None, job))
    return out


def floors(settings: Settings) -> Floors:
    return Floors(settings.degraded_ratio_expected, settings.degraded_ratio_baseline,
                  settings.fleet_peer_floor)


def network_judgement(session: Session, settings: Settings, now: datetime,
                      test: str | None = None) -> tuple[NetworkJudgement, dict[str, Place]]:
    """Every host pair judged and triangulated, and the map. A read that answers often goes
    through `network_kept.KeptJudgements` instead (judged again only when these changed)."""
    where = places(session)
    verdicts = judge_pairs(pair_figures(session, now, test), where, floors(settings))
    return triangulate(verdicts, where), where


def pair_jobs(session: Session, states: tuple[str, ...] | None = None,
              limit: int = 500) -> list[PairJob]:
    query = select(PairJob).order_by(PairJob.id.desc()).limit(limit)
    if states:
        query = query.where(PairJob.state.in_(states))
    return list(session.scalars(query))




def pair_job(session: Session, job_id: int) -> PairJob:
    job = session.get(PairJob, job_id)
    if job is None:
        raise NotFound("pair job", job_id)
    return job


def rendezvous_id(job: PairJob) -> str | None:
    """The NCCL unique id rank 0 put (services/network.py `put_rendezvous`), if any."""
    entry = job.ranks.get("0")
    return entry.get("nccl_id") if isinstance(entry, dict) else None
