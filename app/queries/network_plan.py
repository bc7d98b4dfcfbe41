"""What the pair planner and the cross-node placement decide from: the network judgement,
the hosts the scheduler API would give a job, and the pair jobs not finished yet."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.network import PairKey, pair_key
from peerwatch.app.analysis.node_placement import Choice, choose
from peerwatch.app.analysis.pair_planner import PlanInputs, Planned, plan
from peerwatch.app.queries.network import network_judgement
from peerwatch.app.queries.scheduler import schedulable
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.network import HostPairResult, PairJob

OPEN = ("planned", "submitted", "running")


def last_tested(session: Session) -> dict[PairKey, datetime]:
    out: dict[PairKey, datetime] = {}
    query = (select(HostPairResult.host, HostPairResult.peer_host,
                    func.max(HostPairResult.measured_at))
             .group_by(HostPairResult.host, HostPairResult.peer_host))
    for host, peer, at in session.execute(query):
        key = pair_key(host, peer)
        if key not in out or at > out[key]:
            out[key] = at
    return out


def busy_hosts(session: Session) -> set[str]:
    rows = session.execute(select(PairJob.host, PairJob.peer_host)
                           .where(PairJob.state.in_(OPEN)))
    return {h for row in rows for h in row}


def pair_plan(session: Session, settings: Settings, now: datetime,
              max_pairs: int) -> tuple[list[Planned], dict[str, str]]:
    judgement, places = network_judgement(session, settings, now)
    healthy, not_schedulable = schedulable(session, 1)
    inputs = PlanInputs(places, {h.host for h in healthy}, busy_hosts(session),
                        last_tested(session), judgement.suspects, now,
                        retest=timedelta(seconds=settings.network_retest_s), max_pairs=max_pairs)
    planned, left_out = plan(inputs)
    for host in left_out:
        if host in not_schedulable:
            left_out[host] = not_schedulable[host]
    return planned, left_out


def node_choice(session: Session, settings: Settings, now: datetime,
                count: int) -> tuple[Choice | None, dict[str, str]]:
    judgement, places = network_judgement(session, settings, now)
    healthy, left_out = schedulable(session, 1)
    choice = choose(count, [h.host for h in healthy], places, judgement, left_out)
    return choice, left_out
