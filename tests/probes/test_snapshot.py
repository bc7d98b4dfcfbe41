"""Job snapshots on the simulated fabric and on the real backend over a fake NVML: what is
read, what the diff names (and in what order), and that a quick read never starts CUDA."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from pydantic import ValidationError

from peerwatch.probes.nvidia.real import RealFabric
from peerwatch.probes.nvidia.sysfs import Sysfs
from peerwatch.probes.sim.faults import (
    ErrorGrowth,
    FabricManagerDown,
    FabricUnhealthy,
    GpuLost,
    LinksDown,
    PcieDowntrained,
)
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.snapshot import Phase, Snapshot
from peerwatch.probes.snapshot_diff import Severity, diff_snapshots
from peerwatch.probes.snapshot_read import take_snapshot
from tests.probes.fake_pynvml import FakePynvml
from tests.probes.fakeclock import FakeClock


def test_a_snapshot_holds_gpus_ports_counters_and_fabric_manager() -> None:
    snap = take_snapshot(SimulatedFabric("hgx8"), job_id="4242", phase=Phase.PROLOG)
    assert [g.index for g in snap.inventory.gpus] == list(range(8))
    assert len(snap.inventory.nvlinks) == 8 * 18 == len(snap.counters.links)
    assert snap.inventory.pairs == []  # pairs cost calls and follow from the ports
    assert snap.inventory.fabric_manager is not None and snap.inventory.fabric_manager.running
    assert all(g.switch_fabric and g.switch_fabric.state == "completed"
               for g in snap.inventory.gpus)
    assert 0 < snap.took_s < 1 and not snap.errors
    again = Snapshot.model_validate_json(snap.model_dump_json())
    assert again == snap and again.job_id == "4242" and again.phase is Phase.PROLOG


def test_an_unchanged_fabric_diffs_to_nothing() -> None:
    fabric = SimulatedFabric("hgx8")
    assert diff_snapshots(take_snapshot(fabric), take_snapshot(fabric)) == []


def test_the_diff_names_each_change_most_serious_first() -> None:
    clock = FakeClock()
    fabric = SimulatedFabric("hgx8", clock=clock)
    before = take_snapshot(fabric, job_id="7", phase=Phase.PROLOG)
    fabric.inject(LinksDown(gpu=3, links=(5,)), ErrorGrowth(gpu=2, link=4, counter="replay",
                                                           per_second=2.0),
                  PcieDowntrained(gpu=1, gen=4), FabricManagerDown(), GpuLost(gpu=7),
                  FabricUnhealthy(gpu=6))
    clock.advance(30)
    after = take_snapshot(fabric, job_id="7", phase=Phase.EPILOG)
    changes = diff_snapshots(before, after)
    lines = [c.line() for c in changes]
    assert lines == sorted(lines, key=lambda line: Severity[line.split()[0]])
    kinds = {c.kind: c for c in changes}
    assert kinds["gpu_missing"].severity is Severity.CRITICAL and "GPU7" in kinds[
        "gpu_missing"].text
    assert kinds["link_down"].text == "GPU3 link 5 went down"
    assert kinds["errors_grew"].text == "GPU2 link 4 replay errors +60 (0 -> 60)"
    assert kinds["pcie_gen_down"].text == "GPU1 PCIe gen Gen5 -> Gen4 (max Gen5)"
    assert kinds["fabric_manager_stopped"].severity is Severity.CRITICAL
    assert kinds["fabric_health"].text.startswith("GPU6 fabric health")
    # GPU7's links are not reported as down one by one: the GPU itself is missing.
    assert not any("GPU7 link" in line for line in lines)


def test_gpus_are_matched_by_uuid_when_nvml_renumbers_them() -> None:
    fabric = SimulatedFabric("hgx8")
    before = take_snapshot(fabric)
    gpus = [g for g in before.inventory.gpus if g.index != 2]
    renumbered = [g.model_copy(update={"index": i}) for i, g in enumerate(gpus)]
    old_to_new = {g.index: i for i, g in enumerate(gpus)}
    after = before.model_copy(update={"inventory": before.inventory.model_copy(update={
        "gpus": renumbered,
        "nvlinks": [p.model_copy(update={"gpu": old_to_new[p.gpu]})
                    for p in before.inventory.nvlinks if p.gpu in old_to_new]}),
        "counters": before.counters.model_copy(update={"links": [
            c.model_copy(update={"gpu": old_to_new[c.gpu]})
            for c in before.counters.links if c.gpu in old_to_new]})})
    assert [c.kind for c in diff_snapshots(before, after)] == ["gpu_missing"]


def test_a_counter_that_went_back_is_a_reset_not_growth() -> None:
    before = take_snapshot(SimulatedFabric("h200x2"))
    first = before.counters.links[0]
    grown = before.counters.model_copy(update={"links": [
        first.model_copy(update={"crc_data": (first.crc_data or 0) + 50}),
        *before.counters.links[1:]]})
    later = before.model_copy(update={"counters": grown})
    assert [c.line() for c in diff_snapshots(later, before)] == [
        f"INFO     GPU0 link 0 crc data errors went back {(first.crc_data or 0) + 50} -> "
        f"{first.crc_data} (counter reset)"]
    assert [c.severity for c in diff_snapshots(before, later)] == [Severity.INFO]


def test_driver_and_host_changes_are_named() -> None:
    before = take_snapshot(SimulatedFabric("h200x2"))
    host = before.host.model_copy(update={"driver_version": "590.1", "hostname": "other"})
    texts = [c.text for c in diff_snapshots(before, before.model_copy(update={"host": host}))]
    assert texts == ["the snapshots are of different hosts: sim-h200x2 -> other",
                     "driver changed: 580.159.04 -> 590.1"]


@pytest.mark.parametrize("bad", [{"phase": "prolog"}, {"job_id": "a/b"}, {"job_id": ".."},
                                 {"job_id": "x" * 65}, {"phase": "during"}])
def test_bad_job_fields_are_refused(bad: dict[str, Any]) -> None:
    data = take_snapshot(SimulatedFabric("h200x2")).model_dump(mode="json") | bad
    with pytest.raises(ValidationError):
        Snapshot.model_validate(data)


def test_a_quick_real_fabric_never_starts_cuda_nor_reads_capabilities(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # importing CuPy would fail loudly
    nvml = FakePynvml.from_dump()
    fabric = RealFabric(nvml_module=nvml, sysfs=Sysfs(tmp_path), quick=True)
    capability_calls = []
    real_capability = nvml.nvmlDeviceGetNvLinkCapability
    monkeypatch.setattr(nvml, "nvmlDeviceGetNvLinkCapability",
                        lambda *a: capability_calls.append(a) or real_capability(*a))
    snap = take_snapshot(fabric, workers=2)
    assert [g.index for g in snap.inventory.gpus] == [0, 1] and not snap.errors
    assert len(snap.inventory.nvlinks) == 36 and all(
        p.capabilities == {} for p in snap.inventory.nvlinks)
    assert capability_calls == []
    assert snap.inventory.gpus[0].switch_fabric is not None
    assert len(snap.counters.links) == 36
