"""A host's current fabric, loaded from the inventory tables as the wire schema's types.

The analysis functions (`app/analysis/`) work on `GpuInfo`, `NvLinkPort` and `PairInfo`, the
same values a probe sends, so they never depend on how the database stores them. This module
is the one place that turns rows back into those values, as a `HostFabric`
(`app/records/fabric.py`, which answers "what should this pair measure?" from them).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.records.fabric import HostFabric
from peerwatch.app.store.tables.inventory import Gpu, Host, NvLink, Pair
from peerwatch.probes.gpu_health import GpuDriverHealth
from peerwatch.probes.report import (
    GpuInfo,
    LinkState,
    NvLinkPort,
    P2PCap,
    P2PStatus,
    PairInfo,
    PathLevel,
    PcieLink,
    RdmaInfo,
    RemoteType,
    SwitchFabricInfo,
)


def _gpu_info(row: Gpu) -> GpuInfo:
    return GpuInfo(
        index=row.index, uuid=row.uuid, name=row.name, pci_bus_id=row.pci_bus_id,
        memory_total_bytes=row.memory_total_bytes, cpu_affinity=row.cpu_affinity,
        numa_node=row.numa_node, nvlink_count=row.nvlink_count, pcie=PcieLink(**row.pcie),
        rdma=RdmaInfo(**row.rdma),
        switch_fabric=SwitchFabricInfo(**row.switch_fabric) if row.switch_fabric else None,
        driver=GpuDriverHealth(**row.driver) if row.driver else None,
    )


# The inventory rows were validated as the wire schema when their report was stored:
# ports and pairs (150+ of them on an 8-GPU host, read by every judgement) are built without
# validating them again, every enum converted here as validation would.


def _port(row: Any) -> NvLinkPort:
    """An NvLink row (or a row of its columns) as the wire schema's port."""
    return NvLinkPort.model_construct(
        gpu=row.gpu, link=row.link, state=LinkState(row.state), version=row.version,
        speed_bps=row.speed_bps, remote_type=RemoteType(row.remote_type),
        remote_pci_bus_id=row.remote_pci_bus_id, remote_gpu=row.remote_gpu,
        capabilities=row.capabilities,
    )


def _pair(row: Any) -> PairInfo:
    """A Pair row (or a row of its columns) as the wire schema's pair."""
    return PairInfo.model_construct(
        src=row.src, dst=row.dst, topology=row.topology, pcie_path=PathLevel(row.pcie_path),
        nvlink_width=row.nvlink_width, via_nvswitch=row.via_nvswitch,
        p2p={P2PCap(k): P2PStatus(v) for k, v in row.p2p.items()},
        can_access_peer=row.can_access_peer,
    )


def load_fabric(session: Session, host: Host) -> HostFabric:
    fabric = HostFabric(host=host)
    for gpu in session.scalars(select(Gpu).where(Gpu.host_id == host.id).order_by(Gpu.index)):
        if gpu.present:
            fabric.gpus[gpu.index] = _gpu_info(gpu)
        else:
            fabric.missing_gpus[gpu.index] = gpu
    # ports and pairs as plain rows of the columns used, not ORM objects: 200 of them on an
    # 8-GPU host, read by every judgement (a row reads its columns by name all the same)
    links = select(*_columns(NvLink, _PORT_COLUMNS)).where(NvLink.host_id == host.id)
    for row in session.execute(links.order_by(NvLink.gpu, NvLink.link)):
        (fabric.nvlinks if row.present else fabric.gone_links).append(_port(row))
    pairs = select(*_columns(Pair, _PAIR_COLUMNS)).where(Pair.host_id == host.id,
                                                         Pair.present.is_(True))
    fabric.pairs = {(r.src, r.dst): _pair(r) for r in session.execute(pairs)}
    return fabric


_PORT_COLUMNS = ("gpu", "link", "state", "version", "speed_bps", "remote_type",
                 "remote_pci_bus_id", "remote_gpu", "capabilities", "present")
_PAIR_COLUMNS = ("src", "dst", "topology", "pcie_path", "nvlink_width", "via_nvswitch",
                 "p2p", "can_access_peer")


def _columns(model: type[NvLink] | type[Pair], names: tuple[str, ...]) -> list[Any]:
    return [getattr(model, name) for name in names]

