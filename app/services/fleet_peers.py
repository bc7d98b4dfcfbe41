"""Write side of fleet-relative expectations (docs/fleet-peers.md).

`refresh_fleet_peers` recomputes every peer group's distribution from the stored judged state
(one scan of the newest healthy value per pair and test) and upserts `fleet_peer_stats`; it
runs in the leader's periodic round (`AlertingService.tick`), never per report. A group's
`changed_at` moves only on a material change — the median moved by more than
PEERWATCH_FLEET_PEER_REJUDGE since it last moved, or the group crossed the minimum size, or
it emptied — and then the hosts of that GPU model and driver are stamped, which makes the
judgement's fast path re-judge them (`app.judging.store._nothing_changed`).

`host_peer_checks` is what a host judgement adds: its pairs' and GPUs' groups read from a few stored
rows, each judged (pair, test) checked against its group's median. The recompute stamps
`hosts.peers_changed_at` of every host of a family (GPU model, driver) whose stats changed
materially; the judgement stores the stamp it saw, so the fast path needs no extra read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from peerwatch.app.analysis.fleet_peers import (
    Distribution,
    GroupKey,
    PeerCheck,
    distribution,
    gpu_group,
    pair_group,
    pair_model,
    pcie_downtrained,
    peer_check,
)
from peerwatch.app.analysis.health import TestJudgement
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.queries.fleet_peers import (
    UNKNOWN_DRIVER,
    fleet_members,
    group_stats,
    stats_computed_at,
    stored_stat_rows,
)
from peerwatch.app.records.fabric import HostFabric
from peerwatch.app.records.keys import PairKey
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.fleet import FleetPeerStat
from peerwatch.app.store.tables.inventory import Gpu, Host
from peerwatch.probes.report import TestName
from peerwatch.probes.test_kinds import declared


@dataclass(frozen=True)
class Refresh:
    groups: int  # (group, test) distributions now stored with members
    changed: int  # (GPU model, driver) families whose stats changed materially: re-judged


def _material(row: FleetPeerStat, dist: Distribution, settings: Settings) -> bool:
    eligible = dist.hosts >= settings.fleet_peer_min_hosts
    was = row.hosts >= settings.fleet_peer_min_hosts
    if eligible != was or row.ref_median is None:
        return True
    return abs(dist.median - row.ref_median) > settings.fleet_peer_rejudge * row.ref_median


def _update(row: FleetPeerStat, dist: Distribution, settings: Settings, now: datetime) -> bool:
    changed = _material(row, dist, settings)
    row.hosts, row.pairs, row.median, row.low = dist.hosts, dist.pairs, dist.median, dist.low
    row.computed_at = now
    if changed:
        row.ref_median, row.changed_at = dist.median, now
    return changed


def _empty(row: FleetPeerStat, now: datetime) -> bool:
    """A group with no members left: kept (so its hosts see the change), shown as empty."""
    changed = row.hosts > 0
    row.hosts, row.pairs, row.median, row.low, row.computed_at = 0, 0, None, None, now
    if changed:
        row.ref_median, row.changed_at = None, now
    return changed


def refresh_fleet_peers(session: Session, settings: Settings, now: datetime) -> Refresh:
    """Recompute and store every group's distribution (the caller commits)."""
    members = fleet_members(session, now - timedelta(seconds=settings.fleet_peer_max_age_s))
    stats = {key: distribution(key[1], values, settings.fleet_peer_low_percentile)
             for key, values in members.items()}
    changed: set[tuple[str, str]] = set()  # (model, driver) families
    for row in stored_stat_rows(session):
        key = (GroupKey(row.gpu_model, row.topology, row.driver), TestName(row.test)) \
            if declared(row.test) else None
        dist = stats.pop(key, None) if key else None
        if _update(row, dist, settings, now) if dist else _empty(row, now):
            changed.add((row.gpu_model, row.driver))
    for (group, test), dist in stats.items():
        session.add(FleetPeerStat(
            gpu_model=group.gpu_model, topology=group.topology, driver=group.driver,
            test=test.value, hosts=dist.hosts, pairs=dist.pairs, median=dist.median,
            low=dist.low, ref_median=dist.median, computed_at=now, changed_at=now))
        changed.add((group.gpu_model, group.driver))
    session.flush()
    for model, driver in sorted(changed):
        _stamp_hosts(session, model, driver, now)
    return Refresh(groups=len(members), changed=len(changed))


def _stamp_hosts(session: Session, model: str, driver: str, now: datetime) -> None:
    """Mark the hosts judged against this family's stats: their next judgement is a full one
    (the fast path compares this stamp with the one stored with the host's verdict)."""
    with_model = select(Gpu.host_id).where(Gpu.name.in_(model.split(" + ")), Gpu.present)
    on_driver = func.coalesce(Host.driver_version, UNKNOWN_DRIVER) == driver
    session.execute(update(Host).where(Host.id.in_(with_model), on_driver)
                    .values(peers_changed_at=now))


def refresh_due(session: Session, settings: Settings, now: datetime) -> bool:
    """Are the stored stats older than PEERWATCH_FLEET_PEER_REFRESH_S (or absent)?"""
    last = stats_computed_at(session)
    return last is None or (now - last).total_seconds() >= settings.fleet_peer_refresh_s


def host_driver(row: Host) -> str:
    return row.driver_version or UNKNOWN_DRIVER


def pair_groups(row: Host, fabric: HostFabric) -> dict[tuple[int, int], GroupKey]:
    """The peer group of each of the host's pairs whose GPUs are both present, and of each
    GPU's own tests under (gpu, gpu) (none for a downtrained PCIe link, nor for a PCIe pair
    with such an end)."""
    driver = host_driver(row)
    out = {(g, g): group for g, info in fabric.gpus.items()
           if (group := gpu_group(info.name, info.pcie, driver)) is not None}
    for (s, d), pair in fabric.pairs.items():
        a, b = fabric.gpus.get(s), fabric.gpus.get(d)
        if a is None or b is None:
            continue
        group = pair_group((a.name, b.name), pair.topology, pair.via_nvswitch, driver,
                           pcie_downtrained(a.pcie) or pcie_downtrained(b.pcie))
        if group is not None:
            out[(s, d)] = group
    return out


def host_models(fabric: HostFabric) -> list[str]:
    return sorted({g.name for g in fabric.gpus.values()} | {
        pair_model(a.name, b.name) for a in fabric.gpus.values() for b in fabric.gpus.values()
        if a.name != b.name})


def checks_against(groups: Mapping[tuple[int, int], GroupKey],
                   stats: Mapping[tuple[GroupKey, TestName], Distribution],
                   tests: Mapping[PairKey, TestJudgement], settings: Settings
                   ) -> list[PeerCheck]:
    """Every healthy judged (pair, test) of a host that has a stored group distribution."""
    out = []
    for (s, d, test), j in sorted(tests.items(), key=lambda kv: kv[0]):
        group = groups.get((s, d))
        dist = stats.get((group, test)) if group else None
        if group is None or dist is None or j.value is None or j.verdict is not Verdict.HEALTHY:
            continue
        out.append(peer_check(s, d, test, j.value, j.baseline, group, dist,
                              settings.fleet_peer_floor, settings.fleet_peer_min_hosts))
    return out


def host_peer_checks(session: Session, settings: Settings, row: Host, fabric: HostFabric,
                     tests: Mapping[PairKey, TestJudgement]
                     ) -> tuple[list[PeerCheck], dict[str, Any]]:
    """(the checks, what they were judged against: the host's stamp of its groups' last
    material change, read with the host row before the stats, so a recompute in between
    costs a re-judge, never a missed one)."""
    stamp = row.peers_changed_at
    stats = group_stats(session, host_models(fabric), host_driver(row))
    basis = {"changed_at": stamp.isoformat() if stamp else None}
    return checks_against(pair_groups(row, fabric), stats, tests, settings), basis


def peers_changed_since(row: Host, judged: dict[str, Any]) -> bool:
    """Did the stats a host was judged against (its host facts' "peers") change since? No
    read: the recompute stamps the host row itself."""
    stamp = row.peers_changed_at
    return judged.get("changed_at") != (stamp.isoformat() if stamp else None)
