"""Read one `FleetSnapshot` from the database for a `/metrics` scrape.

Bounded work per scrape: inventory rows, the newest counter sample per host, the results of
each host's latest sweep only (found by `hosts.last_sweep_at`, indexed), baselines, and the
active alerts. Expectations come from the server's own model (`HostFabric.expectation`), so
`/metrics` and the API never disagree on what a pair should reach.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from app.metrics_snapshot import (
    AlertCount,
    FleetSnapshot,
    GpuFacts,
    HostFacts,
    PairFacts,
    PortFacts,
    ResultFacts,
)
from app.models import (
    Alert,
    Baseline,
    Gpu,
    Host,
    LinkSample,
    Measurement,
    NvLink,
    Pair,
    ReportRow,
)
from app.services.fabric_state import load_fabric
from probes.report import LinkCounters, LinkState, P2PCap, P2PStatus, PcieLink, TestName

COUNTER_FIELDS = ("tx_bytes", "rx_bytes", "replay", "recovery", "crc_flit", "crc_data",
                  "ecc_data")


def load_snapshot(session: Session) -> FleetSnapshot:
    hosts = list(session.scalars(select(Host).order_by(Host.name)))
    names = {h.id: h.name for h in hosts}
    sweeps = _latest_reports(session, "sweep")
    reports = _latest_reports(session, None)
    failures = _failures(session, [r.id for r in sweeps.values()])
    return FleetSnapshot(
        hosts=[_host_facts(h, reports.get(h.id), sweeps.get(h.id), failures) for h in hosts],
        gpus=_gpus(session, names),
        ports=_ports(session, names),
        pairs=_pairs(session, names),
        results=_results(session, hosts, sweeps),
        alerts=_alerts(session),
    )


def _latest_reports(session: Session, kind: str | None) -> dict[int, ReportRow]:
    """Each host's newest report (of `kind`), matched on the time stored on the host row."""
    newest = Host.last_sweep_at if kind == "sweep" else Host.last_report_at
    query = select(ReportRow).join(Host, and_(Host.id == ReportRow.host_id,
                                              ReportRow.finished_at == newest))
    if kind is not None:
        query = query.where(ReportRow.kind == kind)
    found: dict[int, ReportRow] = {}
    for row in session.scalars(query.order_by(ReportRow.id)):
        found[row.host_id] = row  # the last stored wins a tie
    return found


def _failures(session: Session, report_ids: list[int]) -> dict[int, int]:
    if not report_ids:
        return {}
    rows = session.execute(
        select(Measurement.report_id, func.count())
        .where(Measurement.report_id.in_(report_ids), Measurement.error.is_not(None))
        .group_by(Measurement.report_id))
    return {report_id: n for report_id, n in rows}


def _host_facts(h: Host, report: ReportRow | None, sweep: ReportRow | None,
                failures: dict[int, int]) -> HostFacts:
    return HostFacts(
        host=h.name, fabric=h.fabric, driver_version=h.driver_version,
        cuda_version=h.cuda_version, probe_version=h.probe_version,
        last_report_at=h.last_report_at, last_sweep_at=h.last_sweep_at,
        sweep_gpu_time_s=sweep.gpu_time_s if sweep else None,
        sweep_wall_time_s=sweep.wall_time_s if sweep else None,
        sweep_device_memory_bytes=sweep.device_memory_bytes_max if sweep else None,
        skipped_gpus=len(sweep.skipped) if sweep else 0,
        transfer_errors=failures.get(sweep.id, 0) if sweep else 0,
        probe_errors=len(report.errors) if report else 0,
    )


def _gpus(session: Session, names: dict[int, str]) -> list[GpuFacts]:
    ports: Counter[tuple[int, int]] = Counter()
    active: Counter[tuple[int, int]] = Counter()
    for host_id, gpu, state, present in session.execute(
            select(NvLink.host_id, NvLink.gpu, NvLink.state, NvLink.present)):
        ports[(host_id, gpu)] += 1
        active[(host_id, gpu)] += present and state == LinkState.UP.value
    rows = session.scalars(select(Gpu).where(Gpu.present.is_(True))
                           .order_by(Gpu.host_id, Gpu.index))
    return [GpuFacts(host=names[g.host_id], gpu=g.index, nvlink_ports=ports[(g.host_id, g.index)],
                     nvlinks_active=active[(g.host_id, g.index)], pcie=PcieLink(**g.pcie))
            for g in rows]


def _newest_counters(session: Session) -> dict[tuple[int, int, int], LinkCounters]:
    newest = (select(LinkSample.host_id, func.max(LinkSample.at).label("at"))
              .group_by(LinkSample.host_id).subquery())
    rows = session.scalars(select(LinkSample).join(
        newest, and_(newest.c.host_id == LinkSample.host_id, newest.c.at == LinkSample.at)))
    return {(r.host_id, r.gpu, r.link): LinkCounters(
        gpu=r.gpu, link=r.link, **{f: getattr(r, f) for f in COUNTER_FIELDS}) for r in rows}


def _ports(session: Session, names: dict[int, str]) -> list[PortFacts]:
    counters = _newest_counters(session)
    rows = session.scalars(select(NvLink).where(NvLink.present.is_(True))
                           .order_by(NvLink.host_id, NvLink.gpu, NvLink.link))
    return [PortFacts(host=names[r.host_id], gpu=r.gpu, link=r.link,
                      up=r.state == LinkState.UP.value,
                      counters=counters.get((r.host_id, r.gpu, r.link))) for r in rows]


def p2p_access(p2p: dict[str, str], can_access_peer: bool | None) -> bool | None:
    """Reads and writes allowed (and the CUDA runtime agrees); None when nothing is known."""
    caps = [p2p.get(c.value) for c in (P2PCap.READ, P2PCap.WRITE)]
    known = [c for c in caps if c is not None]
    if not known and can_access_peer is None:
        return None
    return all(c == P2PStatus.OK.value for c in known) and can_access_peer is not False


def _pairs(session: Session, names: dict[int, str]) -> list[PairFacts]:
    rows = session.scalars(select(Pair).where(Pair.present.is_(True))
                           .order_by(Pair.host_id, Pair.src, Pair.dst))
    return [PairFacts(host=names[r.host_id], src=r.src, dst=r.dst, nvlink_width=r.nvlink_width,
                      p2p_access=p2p_access(r.p2p, r.can_access_peer)) for r in rows]


def _results(session: Session, hosts: list[Host],
             sweeps: dict[int, ReportRow]) -> list[ResultFacts]:
    """Successful pair results of each host's latest sweep, with expectation and baseline."""
    if not sweeps:
        return []
    baselines = {(b.host_id, b.src, b.dst, b.test): b.value
                 for b in session.scalars(select(Baseline))}
    by_report: dict[int, list[Measurement]] = defaultdict(list)
    for m in session.scalars(select(Measurement).where(
            Measurement.report_id.in_([r.id for r in sweeps.values()]),
            Measurement.src.is_not(None), Measurement.value.is_not(None))
            .order_by(Measurement.src, Measurement.dst, Measurement.test)):
        by_report[m.report_id].append(m)
    out: list[ResultFacts] = []
    for host in hosts:
        sweep = sweeps.get(host.id)
        if sweep is None or not by_report[sweep.id]:
            continue
        fabric = load_fabric(session, host)
        for m in by_report[sweep.id]:
            assert m.src is not None and m.dst is not None and m.value is not None
            test = TestName(m.test)
            expect = fabric.expectation(test, m.src, m.dst)
            out.append(ResultFacts(
                host=host.name, src=m.src, dst=m.dst, test=test, value=m.value,
                expected=expect.value if expect else None,
                baseline=baselines.get((host.id, m.src, m.dst, m.test)),
                contended=m.contended))
    return out


def _alerts(session: Session) -> list[AlertCount]:
    counts: Counter[tuple[str, str, str, str]] = Counter()
    for rule, state, labels, host in session.execute(
            select(Alert.rule, Alert.state, Alert.labels, Alert.host)
            .where(Alert.state.in_(("pending", "firing")))):
        counts[(rule, state, str(labels.get("severity", "")), host or "")] += 1
    return [AlertCount(alertname=k[0], state=k[1], severity=k[2], host=k[3], count=n)
            for k, n in sorted(counts.items())]

