"""The demo's network story: the fleet's hosts on a leaf/spine network (probes/sim/simnet.py,
four hosts a leaf), one of them with a bad cable, and the pair tests the planner asks for run
round after round, as the ranks of `peerwatch pairs` jobs would post them, until
triangulation has named the host: one NetworkHostPathSlow, its pairs' cause `host:<name>`
on GET /api/v1/network/pairs, the host left out by GET /api/v1/scheduler/nodes.

In-process (the services the API calls), with the transfer simulated: the real-Slurm run of
the same coordination is tests/deploy/test_slurm_pairs.py.
"""

from __future__ import annotations

import time
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.judging.network import evaluate_network
from peerwatch.app.queries.network_plan import pair_plan
from peerwatch.app.runtime.config import Settings
from peerwatch.app.schemas.network import NetworkMapIn, PairJobIn, PairResultsIn, RankIn
from peerwatch.app.services import network as writes
from peerwatch.probes.report import TestName, TransferResult, Unit, utcnow
from peerwatch.probes.sim.simnet import BadCable, SimHost, SimNetwork

PER_LEAF = 4
MAX_ROUNDS = 12
WAIT_S = 120.0  # for the first hosts judged healthy (the planner tests only those)


def demo_network(hosts: list[str]) -> SimNetwork:
    """Hosts in name order, `PER_LEAF` a leaf, two spine groups; the second host's cable bad."""
    names = sorted(hosts)
    net = SimNetwork({h: SimHost(h, f"leaf{i // PER_LEAF}", f"spine{i // PER_LEAF % 2}")
                      for i, h in enumerate(names)})
    if len(names) >= 3:
        net.faults = [BadCable(names[1])]
    return net


def run_network_story(sessions: sessionmaker[Session], settings: Settings,
                      alerting: AlertingSettings, hosts: list[str]) -> str:
    """Map, pair rounds until the planner has nothing left; the words of what it found."""
    net = demo_network(hosts)
    with sessions() as session:
        writes.replace_map(session, NetworkMapIn.model_validate({"hosts": [
            {"host": h.name, "leaf": h.leaf, "spine": h.spine, "line_rate_bps": h.line_rate_bps}
            for h in net.hosts.values()]}), utcnow())
        ran = 0
        deadline = time.monotonic() + WAIT_S
        while not pair_plan(session, settings, utcnow(), 1)[0] and time.monotonic() < deadline:
            session.rollback()  # a fresh snapshot: the judge is still judging first reports
            time.sleep(1.0)
        for salt in range(MAX_ROUNDS):
            planned, _ = pair_plan(session, settings, utcnow(), max_pairs=64)
            if not planned:
                break
            for p in planned:
                run_pair_job(session, net, p.host, p.peer_host, p.reason, salt)
                ran += 1
        judgement, _ = evaluate_network(session, settings, alerting, utcnow())
    found = "; ".join(f"{f.kind} {f.subject}: {f.reason}" for f in judgement.faults)
    return f"network: {ran} pair tests over {len(net.hosts)} hosts; {found or 'no fault'}"


def run_pair_job(session: Session, net: SimNetwork, a: str, b: str, reason: str,
                 salt: int) -> None:
    """One pair job as `peerwatch pairs` runs it: recorded, both ranks joined, rank 0's
    simulated figure stored (the browser tests feed their network the same way)."""
    now: datetime = utcnow()
    job = writes.create_job(session, PairJobIn(host=a, peer_host=b, scheduler="slurm",
                                               reason=reason[:500]), now)
    writes.join(session, job.id, RankIn(rank=0, host=a), now)
    writes.join(session, job.id, RankIn(rank=1, host=b), now)
    result = TransferResult(test=TestName.NET_WRITE, src=0, dst=0, peer_host=b,
                            value=net.measure(a, b, salt), unit=Unit.BYTES_PER_SECOND,
                            started_at=now, job=f"pair-{job.id}")
    writes.store_results(session, PairResultsIn(host=a, job_id=job.id, results=[result]), now)
