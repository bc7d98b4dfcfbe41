"""The PromQL rules raise what the server raises, for every simulated
fault type.

Each fault of the simulator's catalog (`probes/sim/faults.py`: the `Fault` union, so a new
fault type fails `test_the_catalog_is_complete` until it is listed here) is driven through
one history: an hour healthy (six sweeps, inventory reports every minute), then the fault
for 22 minutes (three sweeps; past every `for`, PCIe's 15 min included). The server ingests,
judges and evaluates its rules at every report; at the same moments the agent's exporter and
the server's `/metrics` are scraped into a generated promtool test over
deploy/prometheus/peerwatch-rules.yml (`promql_twin.py` says why promtool, not a live
Prometheus). The test's expectation is the server's firing alerts at every minute, by name and
object (host, gpu, peer_gpu, link), with the differences made by design (BY_DESIGN: one
table, a reason each) applied; promtool fails, printing both sets, on anything else.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

import pytest
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.rules import RULE_NAMES
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import TestName
from peerwatch.probes.sim.driver_faults import (
    AerGrowth,
    GpuRecoveryAction,
    RowRemapFailed,
    RowRemapPending,
)
from peerwatch.probes.sim.faults import (
    AcsRedirect,
    BandwidthFactor,
    BusyGpu,
    CliqueMoved,
    Contention,
    DriverRestarted,
    ErrorGrowth,
    FabricManagerDown,
    FabricNotCompleted,
    FabricStatusError,
    FabricUnhealthy,
    Fault,
    GpuLost,
    HostCopySlow,
    InsufficientNvlinks,
    LinksDown,
    LinkXid,
    NicPathSys,
    NicPortDown,
    NicPortFlapping,
    NicRateDegraded,
    NicSymbolErrors,
    NvSwitchLost,
    P2PDisabled,
    PcieDowntrained,
    PeerCopiesFail,
    PeermemMissing,
    SwitchSxid,
    SwitchTrayLost,
    ThrottledGpu,
    TransferFails,
    TransferHangs,
)
from peerwatch.probes.sweep import SweepOptions
from tests.app.alerting.promql_twin import (
    Alerted,
    TwinHost,
    promtool_group,
    write_promtool_test,
)
from tests.app.metrics_helpers import promtool

# Every fault type, on the preset it needs (the rack faults need a rack: one NVL72 tray).
CATALOG: list[tuple[Fault, str]] = [
    (LinksDown(gpu=1, count=2), "h200x2"),
    (BandwidthFactor(src=0, dst=1, factor=0.5), "h200x2"),
    (ErrorGrowth(gpu=0, link=3, counter="replay", per_second=0.5), "h200x2"),
    (P2PDisabled(a=0, b=1), "h200x2"),
    (Contention(gpu=0, peer=1), "h200x2"),
    (TransferFails(gpu=1), "h200x2"),
    (TransferHangs(gpu=1, seconds=0.01), "h200x2"),
    (PcieDowntrained(gpu=1, gen=4, width=8), "h200x2"),
    (HostCopySlow(gpu=1, factor=0.4), "h200x2"),
    (BusyGpu(gpu=1), "h200x2"),
    (FabricNotCompleted(gpu=1), "h200x2"),
    (FabricStatusError(gpu=1), "h200x2"),
    (FabricUnhealthy(gpu=1), "h200x2"),
    (FabricManagerDown(), "h200x2"),
    (PeerCopiesFail(a=0, b=1), "h200x2"),
    (DriverRestarted(), "h200x2"),
    (GpuLost(gpu=1), "h200x2"),
    (SwitchTrayLost(tray=4), "nvl72"),
    (NvSwitchLost(switch=0, links=(2, 3)), "hgx8"),
    (InsufficientNvlinks(gpu=2), "nvl72"),
    (CliqueMoved(clique_id=2), "nvl72"),
    (ThrottledGpu(gpu=1, reason="power"), "h200x2"),
    (AcsRedirect(gpus=(0, 1)), "h200x2"),
    (PeermemMissing(), "h200x2"),
    (LinkXid(gpu=1, link=3, every_s=120), "h200x2"),
    (SwitchSxid(), "hgx8"),
    (GpuRecoveryAction(gpu=1, action="drain_p2p"), "h200x2"),
    (RowRemapPending(gpu=1), "h200x2"),
    (RowRemapFailed(gpu=1), "h200x2"),
    (AerGrowth(gpu=1, kind="correctable", per_second=0.5), "h200x2"),
    (NicPortFlapping(nic="mlx5_1"), "hgx8"),
    (NicSymbolErrors(nic="mlx5_1"), "hgx8"),
    (NicPortDown(nic="mlx5_1"), "hgx8"),
    (NicRateDegraded(nic="mlx5_1"), "hgx8"),
    (NicPathSys(gpu=1), "hgx8"),
]



@dataclass(frozen=True)
class ByDesign:
    """A difference between the server and Prometheus that is meant: the rule, and either
    the minutes by which Prometheus fires later (`lag_min`) or None (the server alone)."""

    alertname: str
    lag_min: int | None
    reason: str


BY_DESIGN: tuple[ByDesign, ...] = ()  # none left: PCIeBandwidthDegraded's `for: 12m`
# lagged the server by 2 min until it counted its two sweeps in the expression
LAG = {d.alertname: d.lag_min for d in BY_DESIGN if d.lag_min is not None}
SERVER_ONLY = {d.alertname for d in BY_DESIGN if d.lag_min is None}


def _id(case: tuple[Fault, str]) -> str:
    return type(case[0]).__name__


def test_the_catalog_is_complete() -> None:
    assert {type(f) for f, _ in CATALOG} == set(get_args(Fault))
    assert {d.alertname for d in BY_DESIGN} <= set(RULE_NAMES)


def _name(alert: Alerted) -> str:
    return dict(alert)["alertname"]


def expected(firing: dict[int, set[Alerted]],
             intermittent: dict[int, set[Alerted]] | None = None,
             lag: dict[str, int] | None = None) -> dict[int, set[Alerted]]:
    """What Prometheus must have firing at each step: the server's, less what only the
    server raises, a lagging rule's alert (`lag`: BY_DESIGN's) only once the server has
    had it for its lag (not one firing for an intermittent pattern: its twin has no `for`)."""
    lags = LAG if lag is None else lag
    out = {}
    for step, alerts in firing.items():
        now_intermittent = (intermittent or {}).get(step, set())
        out[step] = {a for a in alerts if _name(a) not in SERVER_ONLY and (
            a in now_intermittent or all(a in firing.get(step - i, set())
                                         for i in range(lags.get(_name(a), 0) + 1)))}
    return out


def assert_prometheus_agrees(host: TwinHost, name: str, want: dict[int, set[Alerted]],
                             tmp_path: Path, what: str = "") -> None:
    """promtool, over the host's scrapes, has firing at each step what `want` says (by name
    and object); else it fails printing both sets, after `what`."""
    path = tmp_path / "twin.test.yml"
    write_promtool_test(path, [promtool_group(host, name, want)])
    done = subprocess.run([promtool(), "test", "rules", str(path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{what}{done.stdout}{done.stderr}"[:20000]


def test_the_expectation_lags_only_the_lagging_rules() -> None:
    """A table's lag is applied as written (the helper above can fail)."""
    slow = frozenset({("alertname", "PCIeBandwidthDegraded"), ("gpu", "1")})
    down = frozenset({("alertname", "NVLinkDown"), ("gpu", "1"), ("link", "3")})
    history = {1: set(), 2: {slow, down}, 3: {slow, down}, 4: {slow, down}}
    got = expected(history, lag={"PCIeBandwidthDegraded": 2})
    assert got == {1: set(), 2: {down}, 3: {down}, 4: {slow, down}}
    assert expected(history) == history  # no rule lags now
    pair = frozenset({("alertname", "P2PBandwidthDegraded"), ("gpu", "0"), ("peer_gpu", "1")})
    assert expected({1: set(), 2: {pair}}, {2: {pair}}) == {1: set(), 2: {pair}}


@pytest.mark.parametrize("case", CATALOG, ids=_id)
def test_prometheus_fires_what_the_server_fires(
        sessions: sessionmaker[Session], sqlite_settings: Settings, tmp_path: Path,
        case: tuple[Fault, str]) -> None:
    """Minute by minute, from the first report: healthy for an hour, then the fault."""
    fault, preset = case
    host = TwinHost(sessions, sqlite_settings, preset=preset)
    host.run(60)
    assert host.firing[60] == set()  # a healthy start
    host.inject(fault)
    host.run(24)
    want = expected(host.firing, host.intermittent)
    assert_prometheus_agrees(host, _id(case), want, tmp_path, f"{fault}: the server fires "
                             f"at the end {sorted(map(sorted, want[host.steps]))}\n")


def _toggle(host: TwinHost, fault: Fault, sweeps: str) -> None:
    """The fault present in the sweeps marked `x` (one character a sweep), absent at `.`."""
    for mark in sweeps:
        present = fault in host.sim.fabric.faults
        if mark == "x" and not present:
            host.inject(fault)
        elif mark != "x" and present:
            host.sim.clear(fault)
        host.run(10)


@pytest.mark.parametrize("sweeps", ["x.x.x....", "xxx....", "x..x..."],
                         ids=["intermittent", "sustained-then-cleared", "twice-in-six"])
def test_prometheus_follows_a_fault_that_comes_and_goes(
        sessions: sessionmaker[Session], sqlite_settings: Settings, tmp_path: Path,
        sweeps: str) -> None:
    """The shapes of a fault in time, not only its type: low in every other sweep (the
    server's intermittent rule, 3 of the newest 6, and its PromQL twin), low for three sweeps
    then gone (both resolve), low twice in six (neither fires); then healthy again."""
    host = TwinHost(sessions, sqlite_settings)
    host.run(60)
    _toggle(host, BandwidthFactor(src=0, dst=1, factor=0.5), sweeps)
    fired = {_name(a) for alerts in host.firing.values() for a in alerts}
    assert fired == ({"P2PBandwidthDegraded"} if sweeps.count("x") >= 3 else set())
    assert host.firing[host.steps] == set()
    assert_prometheus_agrees(host, sweeps, expected(host.firing, host.intermittent),
                             tmp_path)


def test_prometheus_follows_host_copies_slow_in_every_other_sweep(
        sessions: sessionmaker[Session], sqlite_settings: Settings, tmp_path: Path) -> None:
    """A GPU's host copies slow in every other sweep: the server's intermittent verdict
    pages PCIeBandwidthDegraded, and its PromQL twin (3 of the last 6 sweeps) in the same
    minutes; never the sustained rule, on either side."""
    host = TwinHost(sessions, sqlite_settings)
    host.run(60)
    _toggle(host, HostCopySlow(gpu=1, factor=0.4), "x.x.x....")
    assert {_name(a) for alerts in host.intermittent.values() for a in alerts} == {
        "PCIeBandwidthDegraded"}
    assert_prometheus_agrees(host, "pcie-intermittent",
                             expected(host.firing, host.intermittent), tmp_path)


def test_prometheus_follows_a_probe_clock_set_off_and_fixed(
        sessions: sessionmaker[Session], sqlite_settings: Settings, tmp_path: Path) -> None:
    """Class 5 seen from Prometheus: a probe clock 393 s behind for 15 min, then 300 s ahead
    for 5, then right: ProbeClockSkew fires at the same minute on both sides, stays through
    the change of sign and resolves at the same minute, between sweeps."""
    host = TwinHost(sessions, sqlite_settings)
    host.run(60)
    for ahead, minutes in ((-393.0, 15), (300.0, 5), (0.0, 5)):
        host.probe_ahead_s = ahead
        host.run(minutes)
    skewed = [s for s, alerts in host.firing.items() if any(
        _name(a) == "ProbeClockSkew" for a in alerts)]
    assert skewed == list(range(71, 81))  # pending at 61, firing 10 min on, resolved at 81
    assert_prometheus_agrees(host, "clock", expected(host.firing), tmp_path)


def test_prometheus_pages_when_a_pair_page_hold_ends_into_a_pair_fault(
        sessions: sessionmaker[Session], sqlite_settings: Settings, tmp_path: Path) -> None:
    """A pair page held while a GPU pattern may form: GPU0<->GPU1 slow from the first sick
    sweep; in the second, GPU0 is also low once with its other peers, so its pattern may be
    forming and the now sustained pair's page is held; by the third, those are fine again, the hold
    ends and the pair is a pair fault. The server pages at once (its sustain counted during
    the hold), and Prometheus must page in the same minute, not a `for` later."""
    host = TwinHost(sessions, sqlite_settings, preset="mesh4")
    host.run(60)
    pair = BandwidthFactor(src=0, dst=1, factor=0.5)
    others = (BandwidthFactor(src=0, dst=2, factor=0.5), BandwidthFactor(src=0, dst=3, factor=0.5))
    host.inject(pair)
    host.run(10)
    host.sim.inject(*others)
    host.run(10)
    held = {dict(k[1]).get("gpu") for k, v in host.series.items()
            if k[0] == "peerwatch_pair_page_held" and v.get(80) == 1}
    assert held == {"0", "1"}  # both directions of the pair waited in the second sweep
    host.sim.clear(*others)
    host.run(24)
    pages = {s for s, alerts in host.firing.items()
             if any(_name(a) == "P2PBandwidthDegraded" for a in alerts)}
    assert min(pages) == 90  # the third sick sweep: the hold ended into a pair fault
    assert {a for a in host.firing[90] if _name(a) == "P2PBandwidthDegraded"} == {frozenset(
        {("alertname", "P2PBandwidthDegraded"), ("host", host.name), ("gpu", "0"),
         ("peer_gpu", "1")})}  # one page for the pair slow both ways
    assert_prometheus_agrees(host, "hold-ends", expected(host.firing, host.intermittent),
                             tmp_path)



@pytest.mark.parametrize("down_min", [1, 3], ids=["under-for", "past-for"])
def test_prometheus_follows_a_link_that_drops_once_and_comes_back(
        sessions: sessionmaker[Session], sqlite_settings: Settings, tmp_path: Path,
        down_min: int) -> None:
    """A link that drops with an Xid and comes back: one NVLink down, its Xid 74 logged as it
    dropped, then up. For one minute (one report: NVLinkDown pending, under its `for`) no
    link-state rule pages,
    so both sides warn on the link (XidWarning, while the event is inside its 10-min
    window) and page nothing. For three, NVLinkDown pages (naming the Xid) and, the link
    back, neither side raises a second alert for the same drop."""
    host = TwinHost(sessions, sqlite_settings)
    host.run(60)
    down = LinksDown(gpu=1, links=(3,))
    host.inject(down)
    host.run(down_min)
    host.sim.clear(down)
    host.run(15)
    back = 61 + down_min  # the first report with the link up again
    fired = {s: {_name(a) for a in alerts} for s, alerts in host.firing.items() if alerts}
    if down_min == 1:
        flap = frozenset({("alertname", "XidWarning"), ("host", host.name), ("gpu", "1"),
                          ("link", "3"), ("xid", "xid74")})
        assert sorted(fired) == list(range(back, 72))  # the event's window: 10 min
        assert all(host.firing[s] == {flap} for s in fired)
    else:
        assert set(fired) == set(range(62, back))
        assert set().union(*fired.values()) == {"NVLinkDown", "NVLinkWidthReduced"}
    assert_prometheus_agrees(host, f"drop-{down_min}m", expected(host.firing), tmp_path)


def test_prometheus_pages_an_xid_79_once_when_the_event_comes_first(
        sessions: sessionmaker[Session], sqlite_settings: Settings, tmp_path: Path) -> None:
    """The report carrying GPU1's Xid 79 still lists it; the next one lists it gone: one
    GPUMissing from the first of them, on both sides, and no XidFault."""
    host = TwinHost(sessions, sqlite_settings, preset="h200x2")
    host.run(60)
    first = GpuLost(gpu=1, still_listed=True)
    host.inject(first)
    host.run(1)
    host.sim.clear(first)
    host.inject(GpuLost(gpu=1))
    host.run(12)
    names = {_name(a) for step in range(61, host.steps + 1) for a in host.firing[step]}
    assert "GPUMissing" in names and "XidFault" not in names, names
    assert any(_name(a) == "GPUMissing" for a in host.firing[61])  # from the event's report
    want = expected(host.firing, host.intermittent)
    assert_prometheus_agrees(host, "xid79-event-first", want, tmp_path)


@pytest.mark.parametrize("slow", ["one-pair", "every-pair"])
def test_prometheus_pages_a_gpu_slow_only_under_all_to_all_as_the_server_does(
        sessions: sessionmaker[Session], sqlite_settings: Settings, tmp_path: Path,
        slow: str) -> None:
    """An 8-GPU board probed with the all-to-all only (no pair test to explain it). One
    pair, GPU0->GPU1 at 0.4 of its rate: the server judges GPU0's a2a (its sends) and GPU1's
    under NCCL (its receives) below what the topology offers and pages each. Every pair at
    0.4: every GPU alike, which a twin comparing a GPU with its host's fastest could not
    see; the server pages all eight. The twin, comparing the agent's figure with the
    server's exported expectation, pages the same GPUs at the same minutes."""
    host = TwinHost(sessions, sqlite_settings, preset="hgx8",
                    tests=SweepOptions(tests=(TestName.A2A_CE, TestName.A2A_NCCL)))
    host.run(30)
    assert host.firing[30] == set()
    pairs = [(0, 1)] if slow == "one-pair" else [(a, b) for a in range(8) for b in range(8)
                                                 if a != b]
    for a, b in pairs:
        host.inject(BandwidthFactor(a, b, 0.4, both_directions=slow == "one-pair"))
    host.run(24)
    paged = {dict(a)["gpu"] for a in host.firing[host.steps]
             if dict(a)["alertname"] == "AllToAllDegraded"}
    assert paged == ({"0", "1"} if slow == "one-pair" else {str(g) for g in range(8)}), paged
    want = expected(host.firing, host.intermittent)
    end = sorted(map(sorted, want[host.steps]))
    assert_prometheus_agrees(host, f"all-to-all {slow}", want, tmp_path,
                             f"the server fires at the end {end}\n")
