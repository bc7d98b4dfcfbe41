"""The fabric and per-key expectations a judgement works out from a host's inventory are
kept between sweeps while the inventory holds (`app/judging/expectations.py`): a sweep of an
unchanged host reads no inventory row, and a changed inventory (links lost, a PCIe link
trained down) is read and judged against at once. On both backends."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.judged import JudgedTest
from peerwatch.probes.report import ReportKind
from peerwatch.probes.sim.faults import LinksDown, PcieDowntrained
from tests.app.alerting.simhost import SimHost
from tests.app.statement_log import statements

# the fabric's reads (`queries/fabric.load_fabric`): its GPUs, ports and pairs (the alert
# rules' context reads its own few columns of the ports, not these)
INVENTORY_READ = re.compile(r"gpus\.pcie\b|nvlinks\.remote_type|pairs\.nvlink_width")


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    engine = make_engine(settings)
    yield engine
    engine.dispose()


def _bases(sessions: sessionmaker[Session]) -> dict[tuple, str | None]:
    with sessions() as s:
        rows = s.execute(select(JudgedTest.src, JudgedTest.dst, JudgedTest.test,
                                JudgedTest.expected_basis))
        return {(src, dst, test): basis for src, dst, test, basis in rows}


def _swept(host: SimHost) -> None:
    host.advance(600)
    host.sweep()


def test_a_sweep_of_an_unchanged_host_reads_no_inventory_row(engine: Engine,
                                                             settings: Settings) -> None:
    host = SimHost(make_sessionmaker(engine), settings)
    for _ in range(2):
        host.step(600, ReportKind.SWEEP)
    _swept(host)
    with statements(engine) as seen:
        host.evaluate()
    assert not [s for s in seen if INVENTORY_READ.search(s)], seen


@pytest.mark.parametrize("fault, says", [
    (LinksDown(gpu=0, count=2), "links up now"),
    (PcieDowntrained(gpu=1, gen=3), "trained"),
])
def test_a_changed_inventory_is_judged_against_at_once(engine: Engine, settings: Settings,
                                                       fault: object, says: str) -> None:
    sessions = make_sessionmaker(engine)
    host = SimHost(sessions, settings)
    for _ in range(2):
        host.step(600, ReportKind.SWEEP)
    assert not [b for b in _bases(sessions).values() if b and says in b]
    host.inject(fault)  # type: ignore[arg-type]
    _swept(host)
    with statements(engine) as seen:
        host.evaluate()
    assert [s for s in seen if INVENTORY_READ.search(s)]  # read again: its stamp moved
    changed = [b for b in _bases(sessions).values() if b and says in b]
    assert changed, _bases(sessions)
