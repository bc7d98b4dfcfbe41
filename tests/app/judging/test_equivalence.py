"""The incremental judgement judges as the history-reading one did: every simulated fault
history (each fault kind of `probes/sim/faults.py` that a host's sweeps can show, injected
after a healthy history, held past the look-back window, cleared, and an intermittent one)
is judged both ways after every report, and each (pair, test)'s verdict, reason, low run and
`since` agree.

The differences, by design: the baseline is a running robust statistic, no longer the
median recomputed from history, so the reasons are compared with the "0.97 of its 7-day
baseline" figure masked, and the two baselines are asserted within 2.5 % of each other (a
full block of twenty values counts at its median); except for a pair that ran with NVLinks
lost: the old refresh, once the links were back, relearnt from history the figures measured
while they were down (its history does not say at what width a sample ran), the running
baseline never saw them.

Attribution of bad pairs (`app/analysis/attribution.py`) changes pair and GPU verdicts only
(which object a bad pair blames, untrusted pairs non-healthy), never a (pair, test) verdict:
nothing compared here changed, so no difference is admitted for it.
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.queries.fabric import load_fabric
from peerwatch.app.queries.health import host_health
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import ReportKind
from peerwatch.probes.sim.faults import (
    BandwidthFactor,
    BusyGpu,
    Contention,
    DriverRestarted,
    ErrorGrowth,
    FabricManagerDown,
    FabricNotCompleted,
    Fault,
    GpuLost,
    HostCopySlow,
    LinksDown,
    P2PDisabled,
    PcieDowntrained,
    PeerCopiesFail,
    TransferFails,
)
from tests.app.alerting.simhost import SimHost
from tests.app.judging.oracle import Oracle

FAULTS: list[Fault] = [
    LinksDown(gpu=1, count=2), BandwidthFactor(src=0, dst=1, factor=0.5),
    BandwidthFactor(src=0, dst=1, factor=0.75), ErrorGrowth(gpu=0, link=3, counter="replay",
                                                            per_second=0.5),
    P2PDisabled(a=0, b=1), PcieDowntrained(gpu=1, gen=4, width=8), TransferFails(gpu=1),
    GpuLost(gpu=1), FabricNotCompleted(gpu=1), PeerCopiesFail(a=0, b=1), FabricManagerDown(),
    Contention(gpu=0, peer=1), BusyGpu(gpu=1), HostCopySlow(gpu=1, factor=0.4),
    DriverRestarted(),
]
# the figures against the baseline (the change test's sum too: app/analysis/change_point.py)
BASELINE_RATIO = re.compile(r"\d+\.\d\d of its [^,;)]* baseline|CUSUM \d+\.\d\d")


def _compare(host: SimHost, oracle: Oracle, since: dict, cut: set, at: datetime,
             what: str, sweep: bool) -> None:
    with host.sessions() as s:
        row = s.scalars(select(Host).where(Host.name == host.hostname)).one()
        stored = host_health(s, host.settings, row)
        fabric = load_fabric(s, row)
        expected = oracle.judge(s, row, fabric, at, sweep)
    cut |= {(a, b) for (a, b), pair in fabric.pairs.items()
            if pair.nvlink_width < fabric.full_width(a, b)[0]}
    assert set(stored.tests) == set(expected), what
    for gone in set(since) - set(expected):  # a key with no sample left in the window: its
        del since[gone]  # row goes, and comes back with a new `since`
    for key, old in expected.items():
        new = stored.tests[key]
        label = f"{what}: {key}"
        assert new.verdict is old.verdict, f"{label}: {new.reason!r} vs {old.reason!r}"
        assert BASELINE_RATIO.sub("B", new.reason) == BASELINE_RATIO.sub("B", old.reason), label
        assert new.low_since == old.low_since, label
        if key[:2] not in cut and (old.baseline is not None or new.baseline is not None):
            assert new.baseline == pytest.approx(old.baseline, rel=0.025), label
        prev = since.get(key)
        since[key] = prev[1:] if prev and prev[0] is old.verdict else (old.verdict, at)
        since[key] = (old.verdict, since[key][-1])
        assert stored.since[("test", key[0], key[1], key[2].value)] == since[key][1], label


def _drive(host: SimHost, fault: Fault | None, intermittent: bool = False) -> None:
    """A healthy history longer than the fault (so no baseline learns the fault as its
    normal: old and new would learn it at a slightly different sweep), the fault for 2 h
    20 min (past the 2 h look-back window), an hour after."""
    oracle, since, cut = Oracle(host.settings), {}, set()
    for i in range(35):
        if fault is not None and i == 16:
            host.inject(fault)
        if fault is not None and intermittent and 16 < i < 30:  # slow in every other sweep
            host.clear()
            if i % 2:
                host.inject(fault)
        if fault is not None and i == 30:
            host.clear()
        for kind in (ReportKind.INVENTORY, ReportKind.SWEEP):
            host.step(300, kind)
            _compare(host, oracle, since, cut, host.now(), f"{fault} {kind.value} {i}",
                     kind is ReportKind.SWEEP)


@pytest.fixture
def sessions(settings: Settings) -> sessionmaker[Session]:
    return make_sessionmaker(make_engine(settings))


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: type(f).__name__)
def test_every_fault_history_is_judged_as_from_history(
        sessions: sessionmaker[Session], settings: Settings, fault: Fault) -> None:
    _drive(SimHost(sessions, settings), fault)


def test_an_intermittent_fault_is_judged_as_from_history(
        sessions: sessionmaker[Session], settings: Settings) -> None:
    _drive(SimHost(sessions, settings), BandwidthFactor(src=1, dst=0, factor=0.5),
           intermittent=True)
