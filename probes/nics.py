"""The host's RDMA NICs (InfiniBand and RoCE) as the probe read them (wire schema 5).

Read from /sys/class/infiniband/<device> (probes/nvidia/nics.py; the simulated fleet's in
probes/sim/simnics.py). A device is the inventory (`Inventory.nics`): its PCI function, its
type and firmware, and the PCIe path level from each GPU to it, as `nvidia-smi topo -m`
prints it. A port is sampled with the counters (`CounterSample.nic_ports`): its state,
physical state, rate and link layer, and its lifetime counters, judged on the server by
their rate of increase, as NVLink errors are (app/analysis/nic_health.py).

The counters every RDMA device keeps (`ports/<n>/counters/`), in the words of the kernel's
Documentation/ABI/stable/sysfs-class-infiniband (the port's Performance Management
PortCounters attribute of the InfiniBand Architecture Specification). `hw_counters/` holds
each driver's own (mlx5: out_of_buffer, rnr_nak_retry_err, np_cnp_sent ...), kept as read.
Each read stands alone: one the device does not offer ("N/A (no PMA)" on iWARP and some
RoCE devices, a missing file) is named in `unread` with "not supported: ...", one that
failed with "failed: ...", and the rest still go out.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

# counters/<name>: the kernel's words. Lifetime values; only their increase means anything.
COUNTERS: dict[str, str] = {
    "symbol_error": "minor link errors detected on one or more physical lanes",
    "port_rcv_errors": "packets containing an error that were received on the port",
    "port_rcv_remote_physical_errors": "packets marked with the EBP delimiter received",
    "port_rcv_switch_relay_errors": "received packets the switch relay could not forward",
    "link_error_recovery": "times the port training state machine completed link error "
                           "recovery",
    "link_downed": "times the port training state machine failed link error recovery and "
                   "downed the link",
    "local_link_integrity_errors": "times local physical errors exceeded the LocalPhyErrors "
                                   "threshold",
    "excessive_buffer_overrun_errors": "input buffer overruns (misconfiguration, hardware, "
                                       "or extremely poor signal integrity)",
    "port_xmit_constraint_errors": "packets not sent: outbound raw filtering, partition or IP "
                                   "version check",
    "port_rcv_constraint_errors": "packets dropped: inbound raw filtering, partition or IP "
                                  "version check",
    "port_xmit_discards": "outbound packets discarded because the port is down or congested",
    "VL15_dropped": "incoming VL15 (management) packets dropped for lack of resources",
    "port_xmit_wait": "ticks during which the port had data to send but sent none (no "
                      "credits or no arbitration): congestion",
    "port_xmit_data": "data octets sent on all VLs, divided by 4 (lanes)",
    "port_rcv_data": "data octets received on all VLs, divided by 4 (lanes)",
    "port_xmit_packets": "packets sent on all VLs, errors included",
    "port_rcv_packets": "packets received, errors included",
    "unicast_xmit_packets": "unicast packets sent",
    "unicast_rcv_packets": "unicast packets received",
    "multicast_xmit_packets": "multicast packets sent",
    "multicast_rcv_packets": "multicast packets received",
}
# report.PathLevel's values (that module imports this one)
PathName = Literal["X", "PIX", "PXB", "PHB", "NODE", "SYS"]
MAX_NICS = 32
MAX_PORTS = 4 * MAX_NICS

_Int = Annotated[int, Field(ge=0, le=2**63 - 1)]
_Name = Annotated[str, Field(min_length=1, max_length=64)]
_Reason = Annotated[str, Field(max_length=300)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NicDevice(_Model):
    """One RDMA device (`Inventory.nics`)."""

    name: _Name  # e.g. "mlx5_0"
    pci_bus_id: Annotated[str, Field(max_length=32)] | None = None  # "0000:17:00.0"
    hca_type: Annotated[str, Field(max_length=64)] | None = None  # "MT4129"
    fw_ver: Annotated[str, Field(max_length=64)] | None = None
    board_id: Annotated[str, Field(max_length=64)] | None = None
    numa_node: Annotated[int, Field(ge=0, lt=1024)] | None = None
    ports: list[Annotated[int, Field(ge=1, le=255)]] = Field(default_factory=list,
                                                             max_length=8)
    # GPU index -> PCIe path level GPU <-> this NIC (PIX nearest ... SYS across sockets)
    gpu_paths: dict[Annotated[int, Field(ge=0, lt=64)], PathName] = Field(
        default_factory=dict, max_length=64)
    unread: dict[_Name, _Reason] = Field(default_factory=dict, max_length=16)


class NicPort(_Model):
    """One port of an RDMA device, sampled (`CounterSample.nic_ports`)."""

    device: _Name
    port: Annotated[int, Field(ge=1, le=255)]
    state: Annotated[str, Field(max_length=32)] | None = None  # "ACTIVE", "DOWN", ...
    phys_state: Annotated[str, Field(max_length=32)] | None = None  # "LinkUp", "Polling"
    rate_gbps: Annotated[float, Field(ge=0, le=10_000, allow_inf_nan=False)] | None = None
    rate_text: Annotated[str, Field(max_length=64)] | None = None  # "400 Gb/sec (4X NDR)"
    link_layer: Annotated[str, Field(max_length=32)] | None = None  # InfiniBand | Ethernet
    counters: dict[_Name, _Int] = Field(default_factory=dict, max_length=64)
    hw_counters: dict[_Name, _Int] = Field(default_factory=dict, max_length=256)
    unread: dict[_Name, _Reason] = Field(default_factory=dict, max_length=320)

    @property
    def key(self) -> tuple[str, int]:
        return self.device, self.port
