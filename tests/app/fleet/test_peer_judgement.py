"""Fleet-relative judgement end to end on SQLite and PostgreSQL: real ingest of simulated
hosts, the peer stats recomputed from the stored judged state, each host judged against them,
the alert, the API and the re-judge trigger."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.judging.store import judge_and_store
from peerwatch.app.queries.fleet_peers import fleet_peers_response
from peerwatch.app.queries.health import host_health
from peerwatch.app.store.tables.fleet import FleetPeerStat
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import TestName
from tests.app.fleet.peerfleet import PeerFleet, host_slow

H200_NV18 = "of the fleet median for NVIDIA H200 NVSwitch NV18"


def _slow_among(fleet: PeerFleet, peers: int) -> None:
    for i in range(peers):
        fleet.add(f"ok-{i}")
    fleet.add("slow", *host_slow(2, 0.91))
    fleet.sweeps(7)
    fleet.round()


def test_a_host_slow_from_the_start_is_flagged_against_its_peers(fleet: PeerFleet) -> None:
    _slow_among(fleet, 5)
    slow = fleet.health("slow")
    # its own history absorbed the slowdown: every test is healthy against its baseline ...
    assert all(t.verdict is Verdict.HEALTHY for t in slow.tests.values())
    assert all(t.ratio_baseline > 0.97 for t in slow.tests.values()
               if t.ratio_baseline is not None)
    # ... but its pairs are far below the same pairs on its five peers
    for pair in slow.judgement.pairs:
        assert pair.verdict is Verdict.DEGRADED
        assert H200_NV18 in pair.reason and "over 6 hosts on driver" in pair.reason
        assert slow.pair_facts[(pair.src, pair.dst)]["peer"]["flagged"]
    assert slow.judgement.verdict is Verdict.DEGRADED
    assert slow.judgement.reason.startswith("slow: 0.9") and "of its fleet peers" in \
        slow.judgement.reason and "; 0 of 2 GPUs, 2 of 2 pairs" in slow.judgement.reason
    # a 2-GPU board: its one pair is a pair fault, both GPUs kept apart, and
    # what it cannot prove it says: there is no other peer to tell it from a GPU fault
    assert all("no other peer measured" in g.reason for g in slow.judgement.gpus)
    assert 0.88 < slow.peers["ratio"] < 0.93 and slow.peers["below"]
    for i in range(5):
        ok = fleet.health(f"ok-{i}")
        assert ok.judgement.verdict is Verdict.HEALTHY, ok.judgement.reason
        assert ok.peers["ratio"] > 0.97 and not ok.peers["below"]
    # the whole host is slow: one host alert, none per pair
    alerts = fleet.host("slow").alerts("firing")
    assert [(a.rule, a.labels["host"]) for a in alerts] == [("HostBelowFleetPeers", "slow")]
    summary = alerts[0].annotations["summary"]
    assert summary.startswith("slow is 0.9") and "(NVIDIA H200 NVSwitch NV18, driver " in \
        summary and summary.endswith(": 2 pairs below"), summary
    assert not fleet.host("ok-0").alerts("firing")


def test_the_stored_distribution_is_the_fleets(fleet: PeerFleet) -> None:
    _slow_among(fleet, 5)
    with fleet.sessions() as s:
        rows = {r.test: r for r in s.scalars(select(FleetPeerStat))}
        values = [h.tests[(0, 1, TestName.CE_WRITE)].value for h in
                  (host_health(s, fleet.settings, x.hostname) for x in fleet.hosts)]
    assert set(rows) == {"ce_write", "ce_read", "latency", "h2d", "d2h", "local"}
    h2d = rows["h2d"]  # a GPU's own tests: grouped by its PCIe link, one member per GPU
    assert (h2d.gpu_model, h2d.topology, h2d.hosts, h2d.pairs) == ("NVIDIA H200",
                                                                  "PCIe gen5 x16", 6, 12)
    ce = rows["ce_write"]
    assert (ce.gpu_model, ce.topology, ce.hosts, ce.pairs) == ("NVIDIA H200", "NVSwitch NV18",
                                                                6, 12)
    assert min(values) < ce.low < ce.median  # the slow host's pairs pull the low end down
    lat = rows["latency"]
    assert lat.low > lat.median  # latency's worse side is the high one


def test_a_group_too_small_flags_nobody_and_says_why(fleet: PeerFleet) -> None:
    _slow_among(fleet, 3)  # 4 hosts: fewer than the minimum of 5
    slow = fleet.health("slow")
    assert slow.judgement.verdict is Verdict.HEALTHY, slow.judgement.reason
    assert not fleet.host("slow").alerts("firing")
    with fleet.sessions() as s:
        answer = fleet_peers_response(s, fleet.settings, None, TestName.CE_WRITE, slow.host.
                                      last_received_at or slow.host.first_seen)
    (group,) = answer.groups
    assert not group.eligible and group.below == []
    assert group.why_not == "only 4 hosts (fewer than 5): too few to judge anybody against"


def test_peers_arriving_re_judge_a_healthy_unchanged_host(fleet: PeerFleet) -> None:
    """The slow host looked healthy while its group was too small; when peers join, the
    recompute moves the group's `changed_at`, and the judgement's fast path, which would
    otherwise skip a healthy host with no new sweep, judges it again: now flagged."""
    _slow_among(fleet, 3)
    slow = fleet.host("slow")
    slow.step(30)  # an inventory report: nothing judged changed, the fast path skips it
    with fleet.sessions() as s:
        row = s.scalars(select(Host).where(Host.name == "slow")).one()
        assert judge_and_store(s, fleet.settings, row, slow.now(), may_skip=True) is None
        s.rollback()
    late = [fleet.add(f"late-{i}", behind_s=7 * 300 - 30) for i in range(2)]
    fleet.sweeps(7, only=late)  # they catch up with the others' clock
    service, now = slow.service, slow.now()
    refresh = service.refresh_peers(now)
    assert refresh is not None and refresh.changed == 1  # the H200 family became eligible
    with fleet.sessions() as s:
        row = s.scalars(select(Host).where(Host.name == "slow")).one()
        health = judge_and_store(s, fleet.settings, row, now, may_skip=True)
        s.commit()
    assert health is not None and health.judgement.verdict is Verdict.DEGRADED
    assert H200_NV18 in health.judgement.pairs[0].reason
    # a recompute with no material change leaves the fast path free to skip again
    again = service.refresh_peers(now)
    assert again is not None and again.changed == 0
    assert service.refresh_peers(now, only_due=True) is None  # fresh: the round leaves it
    with fleet.sessions() as s:
        row = s.scalars(select(Host).where(Host.name == "ok-0")).one()
        judge_and_store(s, fleet.settings, row, now, may_skip=True)
        s.commit()
        assert judge_and_store(s, fleet.settings, row, now, may_skip=True) is None


def test_a_whole_driver_slower_shows_against_its_sibling_driver(fleet: PeerFleet) -> None:
    """All hosts of one driver 8 % slower: nobody stands out inside the group, the group
    stands out against the same model and topology under the other driver."""
    for i in range(5):
        fleet.add(f"old-{i}", driver="560.35.03")
        fleet.add(f"new-{i}", *host_slow(2, 0.92), driver="570.86.15")
    fleet.sweeps(6)
    fleet.round()
    assert all(fleet.health(h.hostname).judgement.verdict is Verdict.HEALTHY
               for h in fleet.hosts)
    with fleet.sessions() as s:
        answer = fleet_peers_response(s, fleet.settings, "NVIDIA H200", None,
                                      fleet.hosts[0].now())
    gaps = {(g.test, g.driver): g for g in answer.siblings}
    ce = gaps[("ce_write", "570.86.15")]
    assert ce.flagged and ce.reference_driver == "560.35.03" and 0.9 < ce.ratio < 0.93
    assert ce.text.startswith("driver 570.86.15 is 0.9") and ce.text.endswith(
        "of driver 560.35.03 for NVIDIA H200 NVSwitch NV18 ce_write")
    latency = [g for g in answer.siblings if g.test == "latency"]
    assert len(latency) == 1 and not latency[0].flagged  # bandwidth only was slowed
    assert {g.driver for g in answer.groups} == {"560.35.03", "570.86.15"}


def test_peer_api_answers_groups_and_refuses_bad_filters(fleet: PeerFleet) -> None:
    from fastapi.testclient import TestClient

    from peerwatch.app.main import create_app

    _slow_among(fleet, 5)
    with TestClient(create_app(fleet.settings)) as client:
        body = client.get("/api/v1/fleet/peers", params={"test": "ce_write"}).json()
        every = client.get("/api/v1/fleet/peers").json()
        bad = client.get("/api/v1/fleet/peers", params={"test": "warp_speed"})
        none = client.get("/api/v1/fleet/peers", params={"model": "NVIDIA B300"}).json()
        metrics = client.get("/metrics").text
    (group,) = body["groups"]
    assert group["eligible"] and group["hosts"] == 6 and group["unit"] == "B/s"
    below = [(b["host"], b["src"], b["dst"], b["ratio"]) for g in every["groups"]
             for b in g["below"]]  # each flagged pair under the group of its worst test
    assert sorted(b[:3] for b in below) == [("slow", 0, 1), ("slow", 1, 0)]
    assert all(b[3] < 0.93 for b in below)
    assert len(every["groups"]) == 6 and every["siblings"] == []  # 3 pair, 3 per-GPU tests
    series = [line for line in metrics.splitlines()
              if line.startswith("peerwatch_pair_fleet_peer_ratio{")]
    assert len(series) == 2 and all('host="slow"' in line for line in series)  # flagged only
    assert all(0.88 < float(line.rsplit(" ", 1)[1]) < 0.93 for line in series)
    assert bad.status_code == 422 and "test" in bad.text and "ce_write" in bad.text
    assert none["groups"] == [] and none["siblings"] == []


def test_values_older_than_the_max_age_leave_and_an_emptied_group_re_judges(
        fleet: PeerFleet) -> None:
    _slow_among(fleet, 5)
    later = fleet.hosts[0].now() + timedelta(seconds=fleet.settings.fleet_peer_max_age_s + 60)
    refresh = fleet.hosts[0].service.refresh_peers(later)
    assert refresh is not None and (refresh.groups, refresh.changed) == (0, 1)
    with fleet.sessions() as s:
        assert {(r.hosts, r.median) for r in s.scalars(select(FleetPeerStat))} == {(0, None)}
        stamps = set(s.scalars(select(Host.peers_changed_at)))
        assert fleet_peers_response(s, fleet.settings, None, None, later).groups == []
    assert stamps == {later}  # every host of the family is judged again at its next report
