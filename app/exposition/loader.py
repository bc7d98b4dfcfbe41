"""Read one `FleetSnapshot` from the database for a `/metrics` scrape.

Plain selects, each a column list (no ORM objects): hosts with their stored verdict, GPU
verdicts (with whether the GPU is in the newest inventory), active alerts, and the pairs,
GPUs and hosts flagged below their fleet peers (non-healthy rows only). Nothing
is judged here and no history is read, so the cost grows with the number of hosts and GPUs
only (1000 8-GPU hosts: bench/metrics_scale.py).
"""

from __future__ import annotations

from collections import Counter

from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from peerwatch.app.exposition.all_to_all import load_all_to_all
from peerwatch.app.exposition.events import load_events
from peerwatch.app.exposition.gdr import load_gdr
from peerwatch.app.exposition.holds import held_of
from peerwatch.app.exposition.pair_faults import bad_pair_rows, pair_faults_of, unjudged_of
from peerwatch.app.exposition.snapshot import (
    AlertCount,
    FleetSnapshot,
    GpuVerdict,
    HostFacts,
    HostPeerGap,
    PeerGap,
)
from peerwatch.app.queries.busy import refused_after
from peerwatch.app.store.tables.alerts import Alert
from peerwatch.app.store.tables.inventory import Gpu, Host, newest_heard
from peerwatch.app.store.tables.judged import JudgedGpu, JudgedHost, JudgedPair


def load_snapshot(session: Session, gpus: bool = True) -> FleetSnapshot:
    """The fleet as /metrics exports it, from the stored judgements."""
    bad_pairs = bad_pair_rows(session)
    return FleetSnapshot(hosts=_hosts(session),
                         gpus=_gpu_verdicts(session) if gpus else [],
                         alerts=_alerts(session), peer_gaps=_peer_gaps(session),
                         host_peer_gaps=_host_peer_gaps(session),
                         events=load_events(session), held=held_of(bad_pairs),
                         pair_faults=pair_faults_of(bad_pairs),
                         unjudged=unjudged_of(bad_pairs),
                         all_to_all=load_all_to_all(session) if gpus else [],
                         gdr=load_gdr(session) if gpus else [])


def _hosts(session: Session) -> list[HostFacts]:
    rows = session.execute(
        select(Host.name, Host.fabric, Host.driver_version, Host.cuda_version,
               Host.probe_version, Host.last_received_at, Host.last_sweep_at,
               Host.clock_skew_s, Host.refused_reports, Host.last_refused_at,
               Host.last_report_at, Host.last_heard_at, JudgedHost.verdict, JudgedHost.since,
               JudgedHost.stale, JudgedHost.gpus_total, JudgedHost.gpus_healthy,
               JudgedHost.worst_ratio, JudgedHost.facts)
        .outerjoin(JudgedHost, JudgedHost.host_id == Host.id)
        .order_by(Host.name))
    return [HostFacts(
        host=r.name, fabric=r.fabric, driver_version=r.driver_version,
        cuda_version=r.cuda_version, probe_version=r.probe_version,
        last_received_at=r.last_received_at, last_sweep_at=r.last_sweep_at,
        last_heard_at=newest_heard(r.last_received_at, r.last_report_at, r.last_refused_at,
                                   r.last_heard_at),
        clock_skew_s=r.clock_skew_s, verdict=r.verdict,
        refused_reports=refused_after(r.last_refused_at, r.last_received_at,
                                      r.refused_reports), last_refused_at=r.last_refused_at,
        verdict_since=r.since, stale=r.stale, gpus_total=r.gpus_total,
        gpus_healthy=r.gpus_healthy, worst_ratio=r.worst_ratio,
        fabric_problems=tuple((r.facts or {}).get("fabric", ())),
        nics=tuple((r.facts or {}).get("nics", ()))) for r in rows]


def _gpu_verdicts(session: Session) -> list[GpuVerdict]:
    rows = session.execute(
        select(Host.name, JudgedGpu.gpu, JudgedGpu.verdict, Gpu.present, JudgedGpu.facts)
        .join(Host, Host.id == JudgedGpu.host_id)
        .outerjoin(Gpu, and_(Gpu.host_id == JudgedGpu.host_id, Gpu.index == JudgedGpu.gpu))
        .order_by(Host.name, JudgedGpu.gpu))
    return [GpuVerdict(host=name, gpu=gpu, verdict=verdict, present=present,
                       fabric=tuple((facts or {}).get("fabric", ())),
                       throttle=tuple(((facts or {}).get("throttle") or {}).get("kinds", ())),
                       driver=tuple((f["kind"], f["verdict"]) for f in
                                    ((facts or {}).get("driver") or {}).get("findings", ())))
            for name, gpu, verdict, present, facts in rows]


def _alerts(session: Session) -> list[AlertCount]:
    counts: Counter[tuple[str, str, str, str]] = Counter()
    for rule, state, labels, host in session.execute(
            select(Alert.rule, Alert.state, Alert.labels, Alert.host)
            .where(Alert.state.in_(("pending", "firing")))):
        counts[(rule, state, str(labels.get("severity", "")), host or "")] += 1
    return [AlertCount(alertname=k[0], state=k[1], severity=k[2], host=k[3], count=n)
            for k, n in sorted(counts.items())]


def _peer_gaps(session: Session) -> list[PeerGap]:
    """Pairs and GPUs (gpu == peer_gpu) flagged below their fleet peers: only non-healthy
    ones are read, few."""
    pairs = session.execute(
        select(Host.name, JudgedPair.src, JudgedPair.dst, JudgedPair.facts)
        .join(Host, Host.id == JudgedPair.host_id)
        .where(JudgedPair.verdict != "healthy")
        .order_by(Host.name, JudgedPair.src, JudgedPair.dst))
    gpus = session.execute(
        select(Host.name, JudgedGpu.gpu, JudgedGpu.gpu, JudgedGpu.facts)
        .join(Host, Host.id == JudgedGpu.host_id)
        .where(JudgedGpu.verdict != "healthy")
        .order_by(Host.name, JudgedGpu.gpu))
    out = []
    for host, src, dst, facts in [*pairs, *gpus]:
        peer = (facts or {}).get("peer") or {}
        if peer.get("flagged"):
            out.append(PeerGap(host, src, dst, str(peer["test"]), float(peer["ratio"])))
    return out


def _host_peer_gaps(session: Session) -> list[HostPeerGap]:
    """Hosts whose median ratio to their fleet peers is below the floor."""
    rows = session.execute(select(Host.name, JudgedHost.facts)
                           .join(Host, Host.id == JudgedHost.host_id)
                           .where(JudgedHost.verdict != "healthy").order_by(Host.name))
    out = []
    for host, facts in rows:
        peers = (facts or {}).get("peers") or {}
        if peers.get("below") and peers.get("ratio") is not None:
            out.append(HostPeerGap(host, float(peers["ratio"])))
    return out

