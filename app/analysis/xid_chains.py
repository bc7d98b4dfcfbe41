"""NVIDIA's resolution buckets (the Xid catalog's words) as ordered action chains, and what a
bucket says of an event's severity and its Xid 154 linkage. Pure data and small lookups.

A chain is what to do, in order, escalating: drain -> reset the GPU -> restart the OS ->
service, the order NVIDIA's health validation uses. The immediate bucket's steps come
first, then the investigatory bucket's; an event that needs a reset or a reboot escalates
to a reboot and then to service if it recurs.
"""

from __future__ import annotations

from typing import Literal

Severity = Literal["info", "warning", "critical"]

DRAIN = "drain the GPU's jobs (the scheduler answer leaves it out meanwhile)"
RESET_GPU = "reset the GPU (nvidia-smi -r)"
REBOOT = "restart the OS"
SERVICE = "service the GPU: collect nvidia-bug-report.sh and open a case / RMA"
SUPPORT = "collect nvidia-bug-report.sh and contact NVIDIA support"

BUCKET_STEPS: dict[str, tuple[str, ...]] = {
    "RESET_GPU": (DRAIN, RESET_GPU),
    "RESTART_BM": ("drain the node", REBOOT),
    "RESTART_VM": ("drain the node", "restart the VM"),
    "RESTART_APP": ("restart the application",),
    "RESTART_FM": ("restart nvidia-fabricmanager",),
    "IGNORE": ("nothing to do for this event alone",),
    "CONTACT_SUPPORT": (SUPPORT,),
    "CHECK_MECHANICALS": ("check the board's auxiliary power cables and seating",),
    "CHECK_APP/CUDA": ("check the application and its CUDA version",),
    "CHECK_UVM": ("check the application's unified memory (UVM) use",),
    "UPDATE_SWFW": ("update the driver and the GPU firmware",),
    "INVESTIGATE_SW": ("investigate the driver and firmware versions",),
    "INVESTIGATE_SW_USER": ("investigate the software that drove the link",),
    "INVESTIGATE_LINK_SI": ("investigate the link's signal integrity (cable, tray, board)",),
    "XID_154": ("read the GPU's recovery action (nvidia-smi -q: GPU Recovery Action) and "
                "follow it: peerwatch pages it as GPURecoveryActionRequired",),
    "XID_137_FLOW": ("follow NVIDIA's Xid 137 flow (NVLink privilege error)",),
    "WORKFLOW_XID_13": ("follow NVIDIA's Xid 13 workflow (usually the application)",),
    "WORKFLOW_XID_31": ("follow NVIDIA's Xid 31 workflow (usually the application)",),
    "WORKFLOW_XID_45": ("look at the Xid before it: this one is its cleanup",),
    "WORKFLOW_XID_48": (DRAIN, RESET_GPU, "replace the GPU if double-bit errors recur"),
    "WORKFLOW_NVLINK_ERR": ("check the link's error counters (nvidia-smi nvlink -e)", DRAIN,
                            RESET_GPU, "reseat or replace the NVLink path"),
    "WORKFLOW_NVLINK5_ERR": ("decode the subcode in NVIDIA's catalog", DRAIN, RESET_GPU,
                             "check the link's tray or cable"),
}
CRITICAL_BUCKETS = frozenset({"RESET_GPU", "RESTART_BM", "RESTART_VM", "WORKFLOW_XID_48"})
WARNING_BUCKETS = frozenset({"XID_154", "CHECK_MECHANICALS"})
# buckets after which the driver may ask for a recovery action, announced by Xid 154
LINKED_BUCKETS = CRITICAL_BUCKETS | {"WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR"}


def steps(bucket: str) -> tuple[str, ...]:
    """A bucket's steps; words the table does not know are NVIDIA's own, kept as said."""
    bucket = bucket.strip()
    if not bucket or bucket.startswith("N/A"):
        return ()
    return BUCKET_STEPS.get(bucket, (f"NVIDIA says: {bucket}",))


def chain_of(immediate: str, investigatory: str, critical: bool) -> tuple[str, ...]:
    """The ordered chain: the immediate steps, the investigatory ones, and for a critical
    event the escalation (reboot, then service) if it recurs; each step once."""
    found = [*steps(immediate), *steps(investigatory)]
    if critical:
        found += [f"if it recurs: {REBOOT}", f"if it still recurs: {SERVICE}"]
    out: list[str] = []
    for step in found:
        if step not in out:
            out.append(step)
    return tuple(out)


def severity_of(immediate: str) -> Severity:
    if immediate in CRITICAL_BUCKETS:
        return "critical"
    return "warning" if immediate in WARNING_BUCKETS else "info"


def linkage_of(immediate: str) -> str:
    """peerwatch's reading of the Xid 154 linkage (unchecked against the catalog's column)."""
    if immediate == "XID_154":
        return "is Xid 154: the recovery action changed"
    if immediate in LINKED_BUCKETS:
        return "may set a recovery action (Xid 154 follows)"
    return "none"
