"""Can a NIC DMA straight into this GPU? GPUDirect RDMA readiness judged per GPU. Pure.

From what the probe read (probes/nvidia/rdma.py, carried in `RdmaInfo`):
- not ready: no RDMA NIC on the host; no peer-memory path (nvidia_peermem neither loaded
  nor registered with ib_core, and no dma-buf); the NIC's port not ACTIVE / up; CUDA says
  the GPU does not support GPUDirect RDMA;
- poor: works, slowly: the NIC is far on PCIe (PHB, NODE, SYS: through the CPU's root
  complex or across sockets; PIX and PXB stay below a PCIe switch), or a bridge on the
  GPU-NIC path has ACS redirect on (peer writes detour through the root complex);
- ready: a peer-memory path, a near NIC at ACTIVE, no redirect on the path;
- unknown: the probe could not tell (older probes, no /sys).
ACS between GPU pairs does not change RDMA readiness, but is named in the reason: it
routes GPU-to-GPU PCIe traffic the same way. The verdict is a field of the scheduler
answer, never a veto, unless a caller asks for ready GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from peerwatch.probes.report import PathLevel, RdmaInfo

GOOD_PATHS = (PathLevel.INTERNAL, PathLevel.PIX, PathLevel.PXB)


class Readiness(StrEnum):
    READY = "ready"
    POOR = "poor"
    NOT_READY = "not_ready"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class RdmaVerdict:
    readiness: Readiness
    reason: str
    action: str = ""
    read: str = ""  # what the verdict was read from, in one line

    def as_dict(self) -> dict[str, str]:
        return {"readiness": self.readiness.value, "reason": self.reason,
                "action": self.action, "read": self.read}


def _peer_memory(r: RdmaInfo) -> tuple[bool | None, str]:
    if r.peermem_loaded and r.peermem_registered is not False:
        return True, "nvidia_peermem loaded" + (
            " and registered with ib_core" if r.peermem_registered else "")
    if r.peermem_loaded and r.peermem_registered is False:
        if r.dmabuf:
            return True, "dma-buf (nvidia_peermem loaded but not registered with ib_core)"
        return False, "nvidia_peermem loaded but not registered with ib_core"
    if r.dmabuf:
        return True, "no nvidia_peermem; dma-buf possible (open kernel module, kernel >= 5.12)"
    if r.peermem_loaded is None and r.dmabuf is None:
        return None, "peer memory not read"
    return False, "no nvidia_peermem, no dma-buf"


def _read_line(r: RdmaInfo) -> str:
    acs = ("no NIC path" if r.acs_redirect is None else ",".join(r.acs_redirect) or "none")
    return (f"peermem={r.peermem_loaded} registered={r.peermem_registered} "
            f"dmabuf={r.dmabuf} nic={r.nearest_nic} path={r.nic_path} "
            f"port={r.nic_port_state} bridges={','.join(r.path_bridges or []) or 'none'} "
            f"acs_redirect={acs} unread={','.join(r.acs_unread) or 'none'} "
            f"gpudirect={r.gpudirect_supported}")


def _peers_note(r: RdmaInfo) -> str:
    if not r.peer_acs_redirect:
        return ""
    peers = ", ".join(f"GPU{g} via {','.join(b)}" for g, b in sorted(r.peer_acs_redirect.items()))
    return f"; ACS redirect also on the PCIe path to {peers} (GPU peer traffic detours too)"


def judge_rdma(gpu: int, r: RdmaInfo) -> RdmaVerdict:
    """The GPU's readiness, with its reason, the action, and what it was read from."""
    read = _read_line(r)
    head = f"GPU{gpu} GPUDirect RDMA"
    peer_ok, peer_text = _peer_memory(r)
    peers = _peers_note(r)
    if r.nearest_nic is None and peer_ok is None and r.path_bridges is None:
        return RdmaVerdict(Readiness.UNKNOWN, f"{head}: not read by this probe{peers}",
                           "run a probe of this version or later (it reads /sys)", read)
    missing, actions = [], []
    if r.nearest_nic is None:
        missing.append("no RDMA NIC on this host (/sys/class/infiniband shows none)")
        actions.append("none needed unless this host should do GPUDirect RDMA; then fit or "
                       "enable an RDMA NIC (mlx5 modules alone are not a device)")
    if peer_ok is False:
        missing.append(peer_text)
        actions.append("modprobe nvidia_peermem (ships with the driver), or use dma-buf: "
                       "the open kernel module on a 5.12+ kernel")
    if r.gpudirect_supported is False:
        missing.append("CUDA reports no GPUDirect RDMA support")
    if r.nearest_nic is not None and r.nic_port_state not in (None, "ACTIVE", "up"):
        missing.append(f"{r.nearest_nic} port {r.nic_port_state}")
        actions.append(f"bring {r.nearest_nic}'s port up: cable, switch port, subnet manager")
    acs = _acs_text(r)
    if missing:
        tail = "; ".join([*missing, *([peer_text] if peer_ok else []), *([acs] if acs else [])])
        return RdmaVerdict(Readiness.NOT_READY, f"{head} not ready: {tail}{peers}",
                           "; ".join(actions), read)
    poor, actions = [], []
    if r.nic_path is not None and r.nic_path not in GOOD_PATHS:
        poor.append(f"{r.nearest_nic} is {r.nic_path.value} from the GPU (through the CPU)")
        actions.append("place RDMA jobs on a GPU whose NIC sits under the same PCIe switch "
                       "(PIX/PXB), or move the NIC")
    if r.acs_redirect:
        poor.append(f"ACS redirect on {', '.join(r.acs_redirect)} between the GPU and "
                    f"{r.nearest_nic}: peer writes detour through the root complex")
        actions.append("turn off ACS redirect on those bridges (BIOS: ACS / IOMMU / VT-d "
                       "setting, or setpci at boot) unless isolation needs it")
    if poor:
        return RdmaVerdict(Readiness.POOR, f"{head} works slowly: {'; '.join(poor)}; "
                           f"{peer_text}{peers}", "; ".join(actions), read)
    return RdmaVerdict(Readiness.READY, f"{head} ready: {peer_text}; {r.nearest_nic} "
                       f"{r.nic_path.value if r.nic_path else ''} {r.nic_port_state or ''}; "
                       f"{acs or 'no ACS redirect on the path'}{peers}".replace("  ", " "),
                       "", read)


def _acs_text(r: RdmaInfo) -> str:
    if r.acs_redirect:
        return f"ACS redirect on {', '.join(r.acs_redirect)}"
    if r.path_bridges == []:
        return "no PCIe bridge between GPU and NIC"
    if r.acs_unread:
        return f"ACS of {', '.join(r.acs_unread)} not readable (needs root)"
    return ""
