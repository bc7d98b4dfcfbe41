"""Which GPUs the evidence names that NVML does not list, and the index each is judged
under: the server's own row for its PCI address, the index NVML gave it since boot, its
place in PCI order, else the next free one; never an index a present GPU holds."""

from __future__ import annotations

from datetime import UTC, datetime

from peerwatch.app.analysis.gpu_evidence import missing_gpus
from peerwatch.probes.report import GpuEvidence, GpuInfo, PciGpu, SeenGpu

T0 = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
BUSES = ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0"]


def gpu(index: int, bus: str) -> GpuInfo:
    nvml = "0000" + bus.upper()  # NVML's 8-digit domain, upper case
    return GpuInfo(index=index, uuid=f"GPU-{bus}", name="NVIDIA H100", pci_bus_id=nvml,
                   memory_total_bytes=1)


def pci(*buses: str) -> list[PciGpu]:
    return [PciGpu(pci_bus_id=b) for b in buses]


def test_nothing_is_missing_when_nvml_lists_every_gpu_the_bus_has() -> None:
    present = [gpu(i, b) for i, b in enumerate(BUSES)]
    assert missing_gpus(GpuEvidence(pci=pci(*BUSES)), present) == []
    assert missing_gpus(None, present) == []


def test_a_gpu_on_the_bus_nvml_kept_the_slot_of_gets_its_pci_place() -> None:
    present = [gpu(0, BUSES[0]), gpu(1, BUSES[1]), gpu(3, BUSES[3])]  # NVML: GPU2 lost
    [m] = missing_gpus(GpuEvidence(pci=pci(*BUSES)), present)
    assert (m.index, m.pci_bus_id, m.uuid, m.name) == (2, BUSES[2], "", "NVIDIA H100")


def test_renumbered_gpus_keep_their_indices_and_the_missing_one_gets_a_free_one() -> None:
    present = [gpu(0, BUSES[0]), gpu(1, BUSES[1]), gpu(2, BUSES[3])]  # GPU2 gone, renumbered
    [m] = missing_gpus(GpuEvidence(pci=pci(*BUSES)), present)
    assert (m.index, m.pci_bus_id) == (3, BUSES[2])
    [known] = missing_gpus(GpuEvidence(pci=pci(*BUSES)), present, {BUSES[2]: 7})
    assert known.index == 7  # the server's own row for that address


def test_a_gpu_seen_since_boot_keeps_its_nvml_index_and_uuid() -> None:
    seen = [SeenGpu(uuid=f"GPU-{b}", pci_bus_id=b, index=i, name="NVIDIA H100",
                    first_seen_at=T0) for i, b in enumerate(BUSES)]
    present = [gpu(0, BUSES[0]), gpu(2, BUSES[2]), gpu(3, BUSES[3])]
    [m] = missing_gpus(GpuEvidence(pci=pci(BUSES[0], BUSES[2], BUSES[3]),
                                   seen_since_boot=seen), present)  # gone from the bus too
    assert (m.index, m.uuid, m.seen_at) == (1, f"GPU-{BUSES[1]}", T0)
