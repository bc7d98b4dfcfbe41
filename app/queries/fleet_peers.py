"""Reads for fleet-relative expectations (docs/fleet-peers.md).

`fleet_members` is the one fleet-wide scan: every pair's (and every GPU's own) newest
healthy judged value with its peer group, read by the leader's periodic recompute
(`app/services/fleet_peers.py`). Everything else reads the few stored `fleet_peer_stats`
rows: `group_stats` when a host is judged, `peer_view` for the API and page. A GPU's own
tests (h2d, d2h, local) are judged rows keyed (gpu, gpu); their group's "topology" is the
GPU's PCIe link ("PCIe gen5 x16"), so they share the table and the sibling comparison.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, aliased

from peerwatch.app.analysis.fleet_peers import (
    Distribution,
    GroupKey,
    SiblingGap,
    gpu_group,
    pair_group,
    pcie_downtrained,
    sibling_gaps,
)
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.runtime.config import Settings
from peerwatch.app.schemas.fleet import FleetPeersResponse, PeerBelow, PeerGroup, SiblingComparison
from peerwatch.app.store.tables.fleet import FleetPeerStat
from peerwatch.app.store.tables.inventory import Gpu, Host, Pair
from peerwatch.app.store.tables.judged import JudgedGpu, JudgedPair, JudgedTest
from peerwatch.probes.report import PcieLink, TestName, declared_tests, unit_of
from peerwatch.probes.test_kinds import declared

UNKNOWN_DRIVER = "unknown"
Members = dict[tuple[GroupKey, TestName], list[tuple[int, float]]]
Stats = dict[tuple[GroupKey, TestName], Distribution]


def groups_of_fleet(session: Session) -> dict[tuple[int, int, int], GroupKey]:
    """(host id, src, dst) -> peer group of every present pair whose GPUs are present, and
    (host id, gpu, gpu) -> that of every GPU's own tests; none for a downtrained PCIe link
    (a GPU's own tests, and its PCIe pairs)."""
    out, downtrained = gpu_groups_of_fleet(session)
    src, dst = aliased(Gpu), aliased(Gpu)
    query = (
        select(Pair.host_id, Pair.src, Pair.dst, Pair.topology, Pair.via_nvswitch, src.name,
               dst.name, Host.driver_version)
        .join(src, (src.host_id == Pair.host_id) & (src.index == Pair.src) & src.present)
        .join(dst, (dst.host_id == Pair.host_id) & (dst.index == Pair.dst) & dst.present)
        .join(Host, Host.id == Pair.host_id)
        .where(Pair.present))
    keys: dict[tuple[Any, ...], GroupKey | None] = {}  # one GroupKey per distinct shape
    for host_id, s, d, topo, nvswitch, a, b, driver in session.execute(query):
        shape = (a, b, topo, nvswitch, driver,
                 (host_id, s) in downtrained or (host_id, d) in downtrained)
        if shape not in keys:
            keys[shape] = pair_group((a, b), topo, nvswitch, driver or UNKNOWN_DRIVER,
                                     shape[-1])
        if (group := keys[shape]) is not None:
            out[(host_id, s, d)] = group
    return out


def gpu_groups_of_fleet(session: Session) -> tuple[dict[tuple[int, int, int], GroupKey],
                                                     set[tuple[int, int]]]:
    """(host id, gpu, gpu) -> peer group of every present GPU's own tests, and the
    (host id, gpu) whose PCIe link is downtrained (in no group)."""
    query = (select(Gpu.host_id, Gpu.index, Gpu.name, Gpu.pcie, Host.driver_version)
             .join(Host, Host.id == Gpu.host_id).where(Gpu.present))
    out, downtrained = {}, set()
    for host_id, index, name, pcie, driver in session.execute(query):
        link = PcieLink(**(pcie or {}))
        if pcie_downtrained(link):
            downtrained.add((host_id, index))
        elif (group := gpu_group(name, link, driver or UNKNOWN_DRIVER)) is not None:
            out[(host_id, index, index)] = group
    return out, downtrained


def fleet_members(session: Session, since: datetime) -> Members:
    """(group, test) -> [(host id, value)] of every healthy judged pair measured since: two
    plain scans (the pairs' groups, then the judged values), joined here by key."""
    groups = groups_of_fleet(session)
    tests = {t.value: t for t in declared_tests()}
    query = (select(JudgedTest.host_id, JudgedTest.src, JudgedTest.dst, JudgedTest.test,
                    JudgedTest.value)
             .where(JudgedTest.verdict == Verdict.HEALTHY.value, JudgedTest.value.is_not(None),
                    JudgedTest.value_at >= since))
    out: Members = {}
    for host_id, s, d, test, value in session.execute(query):
        group, name = groups.get((host_id, s, d)), tests.get(test)
        if group is not None and name is not None and value is not None:
            out.setdefault((group, name), []).append((host_id, value))
    return out


def stats_computed_at(session: Session) -> datetime | None:
    """When the peer stats were last recomputed (by whichever replica led then)."""
    return session.scalar(select(func.max(FleetPeerStat.computed_at)))


def _key(r: FleetPeerStat) -> tuple[GroupKey, TestName]:
    return GroupKey(r.gpu_model, r.topology, r.driver), TestName(r.test)


def _dist(r: FleetPeerStat) -> Distribution | None:
    if r.median is None or r.low is None or not r.hosts:
        return None
    return Distribution(r.median, r.low, r.hosts, r.pairs)


def stored_stat_rows(session: Session, models: Iterable[str] | None = None,
                     driver: str | None = None) -> list[FleetPeerStat]:
    query = select(FleetPeerStat)
    if models is not None:
        query = query.where(FleetPeerStat.gpu_model.in_(sorted(set(models))))
    if driver is not None:
        query = query.where(FleetPeerStat.driver == driver)
    return list(session.scalars(query.order_by(FleetPeerStat.id)))


def group_stats(session: Session, models: Iterable[str], driver: str) -> Stats:
    """The stored distributions of one host's groups (a handful of indexed rows)."""
    out: Stats = {}
    for r in stored_stat_rows(session, models, driver):
        if declared(r.test) and (dist := _dist(r)) is not None:
            out[_key(r)] = dist
    return out


@dataclass
class PeerGroupView:
    group: GroupKey
    test: TestName
    dist: Distribution
    eligible: bool
    computed_at: datetime
    below: list[dict[str, Any]] = field(default_factory=list)  # pairs flagged against it


@dataclass
class PeerView:
    groups: list[PeerGroupView]
    siblings: list[SiblingGap]


def _flagged_pairs(session: Session) -> dict[tuple[str, str, str, str], list[dict[str, Any]]]:
    """Pairs (and GPUs, src = dst) whose stored verdict carries a flagged peer finding, by
    (group..., test)."""
    rows = [*session.execute(select(Host.name, JudgedPair.src, JudgedPair.dst, JudgedPair.facts)
                             .join(Host, Host.id == JudgedPair.host_id)
                             .where(JudgedPair.verdict != Verdict.HEALTHY.value)),
            *session.execute(select(Host.name, JudgedGpu.gpu, JudgedGpu.gpu, JudgedGpu.facts)
                             .join(Host, Host.id == JudgedGpu.host_id)
                             .where(JudgedGpu.verdict != Verdict.HEALTHY.value))]
    out: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for host, s, d, facts in rows:
        peer = (facts or {}).get("peer")
        if not peer or not peer.get("flagged"):
            continue
        key = (*peer["group"], peer["test"])
        out.setdefault(key, []).append({"host": host, "src": s, "dst": d,
                                        "ratio": peer["ratio"], "value": peer["value"]})
    return out


def peer_view(session: Session, settings: Settings, model: str | None = None,
              test: TestName | None = None) -> PeerView:
    """Every stored group (filtered by model and test) with its flagged pairs, and the
    sibling-driver comparisons among them."""
    flagged = _flagged_pairs(session)
    groups, stats = [], {}
    for r in stored_stat_rows(session, [model] if model else None):
        dist = _dist(r)
        if dist is None or not declared(r.test) or (test and r.test != test.value):
            continue
        group, t = _key(r)
        stats[(group, t)] = dist
        below = sorted(flagged.get((r.gpu_model, r.topology, r.driver, r.test), []),
                       key=lambda p: (p["ratio"], p["host"], p["src"], p["dst"]))
        groups.append(PeerGroupView(group, t, dist, dist.hosts >= settings.fleet_peer_min_hosts,
                                    r.computed_at, below))
    groups.sort(key=lambda g: (g.group, g.test.value))
    gaps = sibling_gaps(stats, settings.fleet_peer_floor, settings.fleet_peer_min_hosts)
    return PeerView(groups, gaps)


def _group_out(g: PeerGroupView, min_hosts: int) -> PeerGroup:
    hosts = f"{g.dist.hosts} host{'' if g.dist.hosts == 1 else 's'}"
    why = None if g.eligible else (f"only {hosts} (fewer than {min_hosts}): too few to judge "
                                   "anybody against")
    return PeerGroup(gpu_model=g.group.gpu_model, topology=g.group.topology,
                     driver=g.group.driver, test=g.test.value, unit=unit_of(g.test).value,
                     median=g.dist.median, low=g.dist.low, hosts=g.dist.hosts,
                     pairs=g.dist.pairs, eligible=g.eligible, why_not=why,
                     computed_at=g.computed_at, below=[PeerBelow(**b) for b in g.below])


def _sibling_out(gap: SiblingGap) -> SiblingComparison:
    return SiblingComparison(gpu_model=gap.group.gpu_model, topology=gap.group.topology,
                             test=gap.test.value, driver=gap.group.driver,
                             reference_driver=gap.reference.driver, ratio=round(gap.ratio, 4),
                             flagged=gap.flagged, text=gap.text)


def fleet_peers_response(session: Session, settings: Settings, model: str | None,
                         test: TestName | None, now: datetime) -> FleetPeersResponse:
    view = peer_view(session, settings, model, test)
    return FleetPeersResponse(
        generated_at=now, floor=settings.fleet_peer_floor,
        min_hosts=settings.fleet_peer_min_hosts,
        low_percentile=settings.fleet_peer_low_percentile,
        groups=[_group_out(g, settings.fleet_peer_min_hosts) for g in view.groups],
        siblings=[_sibling_out(s) for s in view.siblings])
