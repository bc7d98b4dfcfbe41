"""API shapes of a host's RDMA NICs: each device as the newest report read it and each of its
ports as the server judged it (app/analysis/nic_health.py)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class NicPortOut(BaseModel):
    port: int
    verdict: str = Field(examples=["healthy", "degraded", "down"])
    reason: str = Field(examples=["mlx5_0 port 1 ACTIVE at 400.0 Gb/s, no error growth"])
    state: str | None = Field(default=None, examples=["ACTIVE"])
    phys_state: str | None = Field(default=None, examples=["LinkUp"])
    rate_gbps: float | None = None
    expected_gbps: float | None = Field(
        default=None, description="The best rate of a port of the same NIC type and link "
        "layer on the host over the window: what this one should train at.")
    link_layer: str | None = Field(default=None, examples=["InfiniBand", "Ethernet"])
    findings: list[dict[str, str]] = Field(
        default_factory=list, description="kind (down, flap, link_errors, rate, "
        "congestion), words and action of each finding.")
    rates: dict[str, float | None] = Field(
        default_factory=dict, description="Growth per second of each judged counter over "
        "the link-rate window (null: fewer than two readings).")
    counters: dict[str, int] = Field(
        default_factory=dict, description="The newest lifetime value of each judged counter.")


class NicOut(BaseModel):
    name: str = Field(examples=["mlx5_0"])
    pci_bus_id: str | None = None
    hca_type: str | None = None
    fw_ver: str | None = None
    numa_node: int | None = None
    gpu_paths: dict[int, str] = Field(
        default_factory=dict, description="GPU index -> PCIe path level to this NIC "
        "(X, PIX, PXB, PHB, NODE, SYS as `nvidia-smi topo -m` prints them).")
    unread: dict[str, str] = Field(default_factory=dict)
    ports: list[NicPortOut] = Field(default_factory=list)

    @classmethod
    def of(cls, device: dict[str, Any], judged: list[dict[str, Any]]) -> NicOut:
        """A device of the stored inventory with its judged ports."""
        ports = [NicPortOut(**{k: v for k, v in p.items() if k != "nic"})
                 for p in judged if p["nic"] == device["name"]]
        return cls(name=device["name"], pci_bus_id=device.get("pci_bus_id"),
                   hca_type=device.get("hca_type"), fw_ver=device.get("fw_ver"),
                   numa_node=device.get("numa_node"),
                   gpu_paths={int(g): str(v) for g, v in (device.get("gpu_paths") or {}).items()},
                   unread=device.get("unread") or {}, ports=ports)
