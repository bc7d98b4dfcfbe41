"""What a person does about a fault that takes a node out of the scheduler: the last words of
the drain reason (`peerwatch: GPU5 down: all 18 NVLinks down; do: reset the GPU ...`).

One table, from the catalogs the verdicts are made with: the Xid catalog's actions
(`xid_catalog.py`; Xid 79 for a GPU off the bus, 74's for NVLink faults) and the fabric
findings' (`fabric_state.py`). A GPU's reason that quotes an Xid's own `action:` gives that
one. Pure: a reason or an alert name in, an action (or "") out.
"""

from __future__ import annotations

from peerwatch.app.analysis.fabric_state import HEALTH_ACTION, REGISTER_ACTION, TRAIN_ACTION
from peerwatch.app.analysis.xid_catalog import NVLINK_ACTION, lookup

GPU_OFF_BUS = lookup("xid", 79).action
LINKS_DOWN = ("reset the GPU (nvidia-smi -r) or reboot; if its NVLinks stay down, reseat or "
              "replace the NVLink path (cable, tray, board)")
PCIE = "reseat the GPU or its riser; check the slot and its BIOS link settings"
HOST_DOWN = "open the host page: each GPU's reason names its action"

# (words of a verdict's reason, the action); the first match wins: the worst faults first
BY_REASON: tuple[tuple[str, str], ...] = (
    ("missing from the newest inventory", GPU_OFF_BUS),
    ("fabric registration failed", REGISTER_ACTION),
    ("fabric not COMPLETED", TRAIN_ACTION),
    ("NVLinks down", LINKS_DOWN),
    ("NVLinks up", NVLINK_ACTION),
    ("fabric health", HEALTH_ACTION),
    ("PCIe trained", PCIE),
)
BY_ALERT = {"GPUMissing": GPU_OFF_BUS, "NVSwitchFabricNotReady": TRAIN_ACTION,
            "NVLinkDown": LINKS_DOWN, "NVLinkFlapping": NVLINK_ACTION,
            "PCIeLinkDowntrained": PCIE}
XID_ACTION = "; action: "


def for_reason(reason: str) -> str:
    """The action for a GPU's or host's verdict reason ("" when the catalog has none)."""
    if XID_ACTION in reason:  # an Xid's own words: "...; action: <action> [catalog: url]"
        return reason.split(XID_ACTION, 1)[1].split(" [", 1)[0].strip()
    return next((action for words, action in BY_REASON if words in reason), "")


def for_alert(name: str, summary: str = "") -> str:
    """The action for a firing alert that can take a node out."""
    return BY_ALERT.get(name) or for_reason(summary)


def for_host(reason: str) -> str:
    return for_reason(reason) or HOST_DOWN
