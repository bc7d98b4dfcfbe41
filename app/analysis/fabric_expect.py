"""What fabric a GPU *should* have, worked out before any reading is judged against it.

A fixed rule ("18 NVLinks up, fabric COMPLETED") pages on machines that are fine: a PCIe card
without NVLink bridges reports its ports as down, a single board has no NVSwitch fabric and no
Fabric Manager, and some SKUs wire only part of their ports by design (an H100 NVL uses 12 of
its 18 NVLinks through three bridges; H800 and A800 SXM boards use 8). So each GPU first gets
an expectation from its own readings:

- NVSwitch: a port reports an NVSwitch at its far end, or the GPU reports a fabric
  registration (NVML answers a fabric state only for GPUs on an NVSwitch system);
- NVLink: expected on NVSwitch systems and wherever a port is up or names its far end; a
  PCIe SKU ("PCIe"/"NVL" in its name) with every port down and no far end has no bridges;
- fabric registration: expected where the GPU reports one (Hopper and later on NVSwitch);
- Fabric Manager: expected on NVSwitch systems (it trains the switches and registers GPUs);
- links by design: from `DESIGN_LINKS` (or the caller's overrides) by GPU name, else every
  port the GPU reports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from peerwatch.probes.report import GpuInfo, LinkState, NvLinkPort, RemoteType

# NVLinks wired by design, by a substring of NVML's GPU name (datasheet NVLink bandwidth /
# 50 GB/s per link): H100 NVL 600 GB/s = 12 links; H800 SXM and A800 SXM 400 GB/s = 8.
DESIGN_LINKS: dict[str, int] = {"H100 NVL": 12, "H800": 8, "A800": 8}
PCIE_SKU_MARKERS = ("PCIe", "NVL")


@dataclass(frozen=True)
class FabricExpectation:
    """What one GPU's fabric should look like; `basis` says why, in words."""

    nvlink: bool
    nvswitch: bool
    registration: bool
    fabric_manager: bool
    design_links: int
    ports: int
    basis: str

    @property
    def by_design_short(self) -> bool:
        """Fewer links wired than the GPU has ports (healthy when exactly these are up)."""
        return self.nvlink and self.design_links < self.ports


def design_links_for(name: str, ports: int,
                     overrides: Mapping[str, int] | None = None) -> tuple[int, str | None]:
    """(links wired by design, the table entry that said so) for a GPU called `name`."""
    table = {**DESIGN_LINKS, **(overrides or {})}
    for marker in sorted(table, key=len, reverse=True):
        if marker in name:
            return min(table[marker], ports), marker
    return ports, None


def expect_gpu(info: GpuInfo, ports: Sequence[NvLinkPort],
               overrides: Mapping[str, int] | None = None, had: int = 0) -> FabricExpectation:
    """The fabric `info`'s GPU should have, given the ports NVML reported for it.

    `had`: ports the GPU has had (listed before, or NVML's link count): a port the newest
    inventory leaves out still counts against the design (17 listed of 18: 17/18 up)."""
    registration = info.switch_fabric is not None and info.switch_fabric.state not in (
        None, "not_supported")
    nvswitch = registration or any(p.remote_type is RemoteType.NVSWITCH for p in ports)
    any_up = any(p.state is LinkState.UP for p in ports)
    named_far_end = any(p.remote_type is not RemoteType.UNKNOWN or p.remote_gpu is not None
                        for p in ports)
    pcie_sku = any(m in info.name for m in PCIE_SKU_MARKERS)
    if not ports:
        nvlink, why = False, "no NVLink ports: PCIe only"
    elif nvswitch:
        nvlink, why = True, "NVSwitch system"
    elif any_up or named_far_end:
        nvlink, why = True, "direct NVLink"
    elif pcie_sku:
        nvlink, why = False, f"{info.name} with every port down: no NVLink bridges fitted"
    else:
        nvlink, why = True, "NVLink ports reported"
    count = max(len(ports), had, info.nvlink_count) if ports else 0
    design, marker = design_links_for(info.name, count, overrides) if nvlink else (0, None)
    if marker is not None and design < count:
        why += f"; {info.name} wires {design} of {count} NVLinks by design"
    return FabricExpectation(nvlink=nvlink, nvswitch=nvswitch, registration=registration,
                             fabric_manager=nvswitch, design_links=design, ports=count,
                             basis=why)


def unused_by_design(gpus: Mapping[int, GpuInfo],
                     ports_by_gpu: Mapping[int, Sequence[NvLinkPort]],
                     overrides: Mapping[str, int] | None = None) -> set[tuple[int, int]]:
    """(gpu, link) of the down ports a SKU leaves unwired: only where exactly the designed
    number of links is up (one link more down and every down port counts as a fault)."""
    out: set[tuple[int, int]] = set()
    for gpu, info in gpus.items():
        ports = ports_by_gpu.get(gpu, ())
        exp = expect_gpu(info, ports, overrides)
        up = sum(1 for p in ports if p.state is LinkState.UP)
        if exp.by_design_short and up == exp.design_links:
            out |= {(gpu, p.link) for p in ports if p.state is not LinkState.UP}
        elif not exp.nvlink:
            out |= {(gpu, p.link) for p in ports}
    return out
