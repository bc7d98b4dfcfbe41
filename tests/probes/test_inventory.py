"""Inventory and counters are read item by item: one failing item never loses the rest."""

from __future__ import annotations

from peerwatch.probes.errors import FabricUnavailable, NotSupported, PeerwatchProbeError
from peerwatch.probes.inventory import collect_counters, collect_inventory
from peerwatch.probes.report import LinkCounters, ProbeError, Report, TestName
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report


class FlakyFabric(SimulatedFabric):
    """A mesh4 host where GPU 2 is lost, GPU 1's counters fail and PCIe replay is absent."""

    def gpu(self, index: int):  # type: ignore[no-untyped-def]
        if index == 2:
            raise PeerwatchProbeError("NVML: GPU is lost")
        return super().gpu(index)

    def link_counters(self, gpu: int) -> list[LinkCounters]:
        if gpu == 1:
            raise PeerwatchProbeError("NVML: unknown error reading field values")
        return super().link_counters(gpu)

    def pcie_replay(self, gpu: int) -> int:
        raise NotSupported("PCIe replay counter")


def test_a_lost_gpu_is_left_out_with_its_pairs_and_named_in_errors() -> None:
    errors: list[ProbeError] = []
    inv = collect_inventory(FlakyFabric("mesh4"), errors)
    assert [g.index for g in inv.gpus] == [0, 1, 3]
    assert {(p.src, p.dst) for p in inv.pairs} == {(0, 1), (1, 0), (0, 3), (3, 0), (1, 3), (3, 1)}
    assert [e.where for e in errors] == ["simulated:mesh4.gpu gpu=2"]
    assert errors[0].message == "NVML: GPU is lost"


def test_unsupported_counters_are_absent_and_failing_ones_recorded() -> None:
    errors: list[ProbeError] = []
    sample = collect_counters(FlakyFabric("mesh4"), errors)
    assert sample.pcie_replay == {}  # NotSupported: absent, no error
    assert {c.gpu for c in sample.links} == {0, 2, 3}
    assert len(sample.activity) == 4
    assert [e.where for e in errors] == ["simulated:mesh4.link_counters gpu=1"]


def test_a_report_from_a_flaky_host_still_has_everything_else() -> None:
    report = build_report(FlakyFabric("mesh4"), options=SweepOptions(tests=(TestName.CE_WRITE,)))
    assert {(r.src, r.dst) for r in report.results} == {
        (0, 1), (1, 0), (0, 3), (3, 0), (1, 3), (3, 1)}
    wheres = [e.where for e in report.errors]
    assert "simulated:mesh4.gpu gpu=2" in wheres
    assert wheres.count("simulated:mesh4.link_counters gpu=1") >= 1
    assert Report.model_validate_json(report.model_dump_json()) == report


class NoGpus(SimulatedFabric):
    def gpu_count(self) -> int:
        raise FabricUnavailable("NVML: driver not loaded")


def test_a_host_without_gpus_gives_an_empty_report_with_the_reason() -> None:
    report = build_report(NoGpus("h200x2"))
    assert report.inventory.gpus == [] and report.results == []
    assert any("driver not loaded" in e.message for e in report.errors)
