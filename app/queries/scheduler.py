"""`/scheduler/hosts`: which hosts can take a job of N GPUs now, read from the stored state of
every host and GPU in two indexed selects, and the pair faults from the non-healthy pair
rows (no judging, whatever the fleet's size). Both GPUs of a pair fault are offered
(`healthy_gpus`), never in one set (`apart`; `cuda_visible_devices` is the largest set)."""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from typing import Any, NamedTuple

from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.pair_faults import apart_among, largest_set, stored_faults
from peerwatch.app.analysis.rdma import judge_rdma
from peerwatch.app.analysis.switch_fold import offerable
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.queries.health import NOT_JUDGED
from peerwatch.app.schemas.scheduler import (
    GpuRdma,
    SchedulableHost,
    UnhealthyGpu,
    UnhealthyNicPort,
    UnknownPair,
)
from peerwatch.app.store.tables.inventory import Gpu, Host
from peerwatch.app.store.tables.judged import JudgedGpu, JudgedHost, JudgedPair
from peerwatch.probes.report import RdmaInfo

RDMA_MEMO = 65_536  # GPUs whose stored RDMA facts are judged once (8192 8-GPU hosts; ~0.8 kB each)


class _Gpu(NamedTuple):
    gpu: int
    verdict: str
    reason: str
    offered: bool  # healthy, or only its bandwidth reduced by a lost switch


def _reduced_of(session: Session) -> set[tuple[int, int]]:
    """(host id, GPU) of the degraded GPUs a job may still use (`switch_fold.offerable`):
    only degraded rows' facts are read, few."""
    rows = session.execute(select(JudgedGpu.host_id, JudgedGpu.gpu, JudgedGpu.facts)
                           .where(JudgedGpu.verdict == Verdict.DEGRADED.value))
    return {(h, g) for h, g, facts in rows
            if offerable(Verdict.DEGRADED.value, (facts or {}).get("fabric", ()))}


@lru_cache(maxsize=RDMA_MEMO)
def _readiness(index: int, stored: str) -> GpuRdma | None:
    """GPU `index`'s readiness from its stored RDMA facts (the column's JSON text), or None
    for a row of another schema version (no field rather than a 500). Answers share the
    one object: nothing changes a response's models after they are made.

    Memoised on the text: a GPU's facts change only with its inventory, while every
    `/scheduler/hosts` call judged all of them again — at 1000 hosts decoding, validating
    and judging 8000 GPUs' facts was most of the answer's CPU."""
    try:
        v = judge_rdma(index, RdmaInfo.model_validate_json(stored))
    except ValueError:
        return None
    return GpuRdma(gpu=index, readiness=v.readiness.value, reason=v.reason)


def _rdma_of(session: Session) -> dict[int, list[GpuRdma]]:
    """Host id -> each present GPU's RDMA readiness, judged from the stored inventory."""
    out: dict[int, list[GpuRdma]] = defaultdict(list)
    for host_id, index, stored in session.execute(
            select(Gpu.host_id, Gpu.index, cast(Gpu.rdma, Text)).where(Gpu.present.is_(True))
            .order_by(Gpu.host_id, Gpu.index)):
        found = _readiness(index, stored)
        if found is not None:
            out[host_id].append(found)
    return out


def apart_of(session: Session, by_name: bool = False) -> dict[Any, list[tuple[int, int]]]:
    """Host id (or name) -> its pair faults (`pair_faults.py`), from the non-healthy pair
    rows' facts (few rows: only pairs not healthy)."""
    key = Host.name if by_name else JudgedPair.host_id
    rows: dict[Any, list[tuple[int, int, Any]]] = defaultdict(list)
    for host, src, dst, facts in session.execute(
            select(key, JudgedPair.src, JudgedPair.dst, JudgedPair.facts)
            .join(Host, Host.id == JudgedPair.host_id)
            .where(JudgedPair.verdict != Verdict.HEALTHY.value)):
        rows[host].append((src, dst, facts))
    return {h: sorted(stored_faults(found)) for h, found in rows.items()}


def unknown_pairs_of(session: Session) -> dict[int, list[UnknownPair]]:
    """Host id -> its pairs unknown because a throttled GPU confounded a test (their rows'
    facts say `unjudged`): few rows, only unknown pairs are read."""
    out: dict[int, list[UnknownPair]] = defaultdict(list)
    for host_id, src, dst, reason, facts in session.execute(
            select(JudgedPair.host_id, JudgedPair.src, JudgedPair.dst, JudgedPair.reason,
                   JudgedPair.facts)
            .where(JudgedPair.verdict == Verdict.UNKNOWN.value)
            .order_by(JudgedPair.host_id, JudgedPair.src, JudgedPair.dst)):
        if (facts or {}).get("unjudged"):
            out[host_id].append(UnknownPair(src=src, dst=dst, reason=reason))
    return out


def _kept_apart(good: list[int], apart: list[tuple[int, int]], wanted: int) -> str:
    pairs = ", ".join(f"GPU{a} and GPU{b}" for a, b in apart)
    return (f"{len(largest_set(good, apart))} of {len(good)} healthy GPUs may share a job "
            f"({pairs} kept apart: a pair fault), {wanted} asked for")


def _candidate(row: Any, gpus: list[_Gpu], wanted: int, rdma: list[GpuRdma] | None = None,
               only_ready: bool = False, faults: list[tuple[int, int]] | None = None,
               unknown: list[UnknownPair] | None = None) -> SchedulableHost | str:
    """The host as a candidate for a job of `wanted` GPUs, or why it cannot take one;
    `only_ready`: only RDMA-ready GPUs count (the caller asked for `rdma_ready`); `faults`:
    its pair faults, whose two GPUs are both offered but never in one set."""
    if row.verdict is None:
        return f"unknown: {NOT_JUDGED}"
    if row.stale:
        return f"stale: {row.reason}"
    if row.verdict == Verdict.DOWN:
        return f"down: {row.reason}"
    good = [g.gpu for g in gpus if g.offered]
    if only_ready:
        ready = {r.gpu for r in rdma or [] if r.readiness == "ready"}
        good = [g for g in good if g in ready]
        if len(good) < wanted:
            return (f"{len(good)} healthy GPUs ready for GPUDirect RDMA of {len(gpus)}, "
                    f"{wanted} asked for")
    if len(good) < wanted:
        return f"{len(good)} healthy GPUs of {len(gpus)}, {wanted} asked for"
    apart = apart_among(good, faults or ())
    together = largest_set(good, apart)
    if len(together) < wanted:
        return _kept_apart(good, apart, wanted)
    return SchedulableHost(
        host=row.name, gpus_total=len(gpus), healthy_gpus=good,
        cuda_visible_devices=",".join(map(str, together)), apart=apart,
        unhealthy=[UnhealthyGpu(gpu=g.gpu, verdict=Verdict(g.verdict), reason=g.reason)
                   for g in gpus if not g.offered],
        reduced=[UnhealthyGpu(gpu=g.gpu, verdict=Verdict(g.verdict), reason=g.reason)
                 for g in gpus if g.offered and g.verdict != Verdict.HEALTHY],
        last_report_at=row.last_report_at, judged_at=row.judged_at, rdma=rdma or [],
        unknown_pairs=[p for p in unknown or () if {p.src, p.dst} <= set(good)],
        unhealthy_nics=unhealthy_nics(getattr(row, "facts", None)),
    )


def unhealthy_nics(facts: dict[str, Any] | None) -> list[UnhealthyNicPort]:
    """The host's NIC ports not healthy, from its stored judgement's facts."""
    return [UnhealthyNicPort(nic=p["nic"], port=p["port"], verdict=p["verdict"],
                             reason=p["reason"])
            for p in (facts or {}).get("nics", ()) if p["verdict"] != Verdict.HEALTHY.value]


def schedulable(session: Session, wanted: int, rdma_ready: bool = False
                ) -> tuple[list[SchedulableHost], dict[str, str]]:
    """(hosts that can take `wanted` GPUs, {every other host: why not}), by host name, each
    with its GPUs' RDMA readiness (`rdma_ready`: only ready GPUs count as usable).

    Plain columns, not ORM objects: at 1350 hosts (7200 GPUs) loading every judged GPU's
    row with its facts was most of the answer's time (bench/domains.py's reference)."""
    gpus: dict[int, list[_Gpu]] = defaultdict(list)
    reduced = _reduced_of(session)
    for host_id, gpu, verdict, reason in session.execute(
            select(JudgedGpu.host_id, JudgedGpu.gpu, JudgedGpu.verdict, JudgedGpu.reason)
            .order_by(JudgedGpu.host_id, JudgedGpu.gpu)):
        gpus[host_id].append(_Gpu(gpu, verdict, reason, verdict == Verdict.HEALTHY.value
                                  or (host_id, gpu) in reduced))
    hosts: list[SchedulableHost] = []
    left_out: dict[str, str] = {}
    rows = session.execute(select(Host.id, Host.name, Host.last_report_at, JudgedHost.verdict,
                                  JudgedHost.stale, JudgedHost.reason, JudgedHost.judged_at,
                                  JudgedHost.facts)
                           .outerjoin(JudgedHost, JudgedHost.host_id == Host.id)
                           .order_by(Host.name))
    rdma, apart, unknown = _rdma_of(session), apart_of(session), unknown_pairs_of(session)
    for row in rows:
        found = _candidate(row, gpus.get(row.id, []), wanted, rdma.get(row.id, []),
                           rdma_ready, apart.get(row.id), unknown.get(row.id))
        if isinstance(found, str):
            left_out[row.name] = found
        else:
            hosts.append(found)
    return hosts, left_out
