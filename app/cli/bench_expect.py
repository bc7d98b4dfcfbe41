"""Measured against expected, for `peerwatch bench`: each result next to what its topology
promises (`app.analysis.expected`), so a person sees at once which pair falls short."""

from __future__ import annotations

from dataclasses import dataclass

from peerwatch.app.analysis.all_to_all import expected_all_to_all, flows_of
from peerwatch.app.analysis.expected import Expectation, expected, expected_gpu, ratio
from peerwatch.probes.report import (
    GpuInfo,
    Inventory,
    LinkState,
    PairInfo,
    TransferResult,
    test_scope,
)
from peerwatch.probes.test_kinds import kind_of


@dataclass(frozen=True)
class Judged:
    result: TransferResult
    expectation: Expectation | None
    ratio: float | None


class Expectations:
    def __init__(self, inventory: Inventory) -> None:
        self.gpus: dict[int, GpuInfo] = {g.index: g for g in inventory.gpus}
        self.pairs: dict[tuple[int, int], PairInfo] = {(p.src, p.dst): p for p in inventory.pairs}
        self.speed: dict[int, float] = {}
        for port in inventory.nvlinks:
            if port.state is LinkState.UP and port.speed_bps:
                self.speed.setdefault(port.gpu, port.speed_bps)

    def _speed(self, a: int, b: int) -> float | None:
        speeds = [s for s in (self.speed.get(a), self.speed.get(b)) if s]
        return min(speeds) if speeds else None

    def judge(self, r: TransferResult) -> Judged:
        """Expectation and ratio of one result; None where unknowable (allreduce over a set,
        a failed test, a pair the inventory could not describe)."""
        if r.src is not None and r.dst is None and test_scope(r.test) == "gpu":
            gpu = self.gpus.get(r.src)
            if kind_of(r.test).joint:
                expect = expected_all_to_all(r.test, r.src, flows_of(
                    self.pairs, self.gpus, self._speed))
            else:
                expect = expected_gpu(r.test, gpu) if gpu is not None else None
            return Judged(r, expect, None if expect is None or r.value is None
                          else ratio(r.test, r.value, expect.value))
        if r.src is None or r.dst is None:
            return Judged(r, None, None)
        pair = self.pairs.get((r.src, r.dst))
        src, dst = self.gpus.get(r.src), self.gpus.get(r.dst)
        if pair is None or src is None or dst is None:
            return Judged(r, None, None)
        speeds = [s for s in (self.speed.get(r.src), self.speed.get(r.dst)) if s]
        expect = expected(r.test, pair, src, dst, min(speeds) if speeds else None)
        if expect is None or r.value is None:
            return Judged(r, expect, None)
        return Judged(r, expect, ratio(r.test, r.value, expect.value))
