"""A judgement's `HostFabric` dies with the judgement: what its methods work out is kept on
the fabric itself, not in a cache of the class that would hold every fabric (and its host
row) for good, one more per sweep. On both backends."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from peerwatch.app.judging import load
from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.records.fabric import HostFabric
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.inventory import Host
from peerwatch.probes.report import ReportKind, TestName
from tests.app.alerting.simhost import SimHost
from tests.app.factory import inventory


def test_a_judged_fabric_is_collected_after_the_judgement(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = make_engine(settings)
    try:
        host = SimHost(make_sessionmaker(engine), settings)
        for _ in range(2):  # the first judgement's fabric is the one the app's cache keeps
            host.step(600, ReportKind.SWEEP)
        seen: list[weakref.ref[HostFabric]] = []
        real = load.fabric_of

        def spied(*args: Any) -> Any:
            fabric, expectations = real(*args)
            assert fabric.expectation(TestName.CE_WRITE, 0, 1) is not None  # worked out
            seen.append(weakref.ref(fabric))
            return fabric, expectations

        monkeypatch.setattr(load, "fabric_of", spied)
        for _ in range(2):
            host.step(600, ReportKind.SWEEP)
        assert len(seen) == 2
        gc.collect()
        assert [ref() for ref in seen] == [None, None]
    finally:
        engine.dispose()


def _fabric() -> HostFabric:
    inv = inventory(2)
    return HostFabric(host=Host(name="lifetime"), gpus={g.index: g for g in inv.gpus},
                      nvlinks=list(inv.nvlinks), pairs={(p.src, p.dst): p for p in inv.pairs})


def test_a_fabric_keeps_what_it_worked_out_for_itself_only() -> None:
    one, other = _fabric(), _fabric()
    first = one.full_expectation(TestName.CE_WRITE, 0, 1)
    assert first is not None and one.full_expectation(TestName.CE_WRITE, 0, 1) is first
    assert other._memo == {}  # nothing shared between fabrics
    ref = weakref.ref(one)
    del one
    gc.collect()
    assert ref() is None
