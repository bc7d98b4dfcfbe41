"""What each Xid and SXid means to peerwatch: pure data and a pure lookup.

Sources (the catalog version every answer cites):
- Xids: NVIDIA's Xid catalog, "Analyzing Xid errors" (driver R580), XID_URL;
- SXids: NVIDIA Fabric Manager user guide, "NVSwitch SXid errors", SXID_URL.
Checked here: every Xid number and name against the open GPU kernel module's `nverror.h`
(48 ROBUST_CHANNEL_GPU_ECC_DBE … 74 NVLINK_ERROR, 79 GPU_HAS_FALLEN_OFF_THE_BUS, 140
UNRECOVERABLE_ECC_ERROR_ESCAPE, 144-150 NVLINK_SAW/RLW/TLW/TREX/NVLPW_CTRL/NETIR/MSE_ERROR);
SXids 12028 (non-fatal egress non-posted PRIV error) and 20034 (fatal LTSSM fault up) against
real kmsg lines; 24007's name is the Fabric Manager guide's, not re-checked.
Only the events that bear on a GPU, its NVLinks or its NVSwitch fabric are listed with an
action; any other number is shown as `info` (never changes a verdict) with the catalog's URL.

`object` says what the event is about (a GPU, one NVLink, an NVSwitch); `severity` what one
event alone is: `info` (shown only), `warning` (an alert, the verdict unchanged) or
`critical` (the object is faulty at once). `threshold` turns repeats into a fault: that many
events of the object within `window_s` (operators ask for count/window thresholds before an
event alone makes a node fault). Blackwell's NVLink Xids 144-150 carry their own severity
word in the line, which decides: a non-fatal one is never called fatal.

`p2p` marks the classes that bear on peer copies: the GPU off the bus (79), its memory
(ECC: 48, 64, 94, 95, 140), its firmware stopped (62 halt, 119/120 GSP) and its NVLinks (74,
144-150). One of these logged by one end of a pair whose copies fail or run slow explains
the pair (`app/analysis/xid_attribution.py`); the application's faults (13, 31, 43, 45) and
notices that stop nothing (61, 63, 92) say nothing about P2P.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

XID_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
SXID_URL = ("https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/"
            "index.html#nvswitch-sxid-errors")
CATALOG_VERSION = "NVIDIA Xid catalog R580; Fabric Manager user guide R580"

Object = Literal["gpu", "link", "switch"]
Severity = Literal["info", "warning", "critical"]
RESET = "drain the host, reset the GPU (nvidia-smi -r) or reboot"


@dataclass(frozen=True)
class CatalogEntry:
    kind: Literal["xid", "sxid"]
    code: int
    name: str
    object: Object
    severity: Severity
    action: str
    threshold: int | None = None  # events within window_s that make the object faulty
    p2p: bool = False  # a class that explains failing or slow peer copies (see above)
    window_s: float = 600.0
    source: str = XID_URL
    version: str = CATALOG_VERSION

    @property
    def label(self) -> str:
        return f"{'SXid' if self.kind == 'sxid' else 'Xid'} {self.code}"


def _xid(code: int, name: str, obj: Object, severity: Severity, action: str,
         threshold: int | None = None, p2p: bool = False) -> CatalogEntry:
    return CatalogEntry("xid", code, name, obj, severity, action, threshold, p2p)


def _sxid(code: int, name: str, severity: Severity, action: str,
          threshold: int | None = None) -> CatalogEntry:
    return CatalogEntry("sxid", code, name, "switch", severity, action, threshold,
                        source=SXID_URL)


NVLINK_ACTION = ("check the link's error counters (nvidia-smi nvlink -e); if it repeats, "
                 "reset the GPU, then reseat or replace the NVLink path (cable, tray, board)")
NVLINK5_ACTION = ("decode the subcode in NVIDIA's catalog; a fatal one needs a GPU reset and "
                  "a look at the link's tray/cable")

_ENTRIES: tuple[CatalogEntry, ...] = (
    _xid(13, "Graphics engine exception", "gpu", "info",
         "usually the application; run a GPU check if it repeats with no application cause"),
    _xid(31, "GPU memory page fault", "gpu", "info", "usually the application"),
    _xid(43, "GPU stopped processing", "gpu", "info", "usually the application"),
    _xid(45, "Preemptive cleanup, due to a previous error", "gpu", "info",
         "look at the Xid before it"),
    _xid(48, "Double-bit ECC error", "gpu", "critical", f"{RESET}; replace the GPU if it recurs",
         p2p=True),
    _xid(61, "Internal micro-controller breakpoint/warning", "gpu", "warning",
         "collect nvidia-bug-report; reset the GPU if it repeats", threshold=3),
    _xid(62, "Internal micro-controller halt", "gpu", "critical", RESET, p2p=True),
    _xid(63, "ECC page retirement or row remapping recorded", "gpu", "warning",
         "reset the GPU when it is idle, so the remapping takes effect"),
    _xid(64, "ECC page retirement or row remapper failure", "gpu", "critical",
         f"{RESET}; replace the GPU if remapping keeps failing", p2p=True),
    _xid(74, "NVLink error", "link", "warning", NVLINK_ACTION, threshold=3, p2p=True),
    _xid(79, "GPU has fallen off the bus", "gpu", "critical",
         "drain the host; check PCIe seating, power and thermals; reboot; replace the GPU if "
         "it recurs", p2p=True),
    _xid(92, "High single-bit ECC error rate", "gpu", "warning",
         "watch the GPU's ECC counters; replace it if the rate stays high"),
    _xid(94, "Contained ECC error", "gpu", "warning",
         "restart the application that used the GPU; reset the GPU when idle", threshold=3,
         p2p=True),
    _xid(95, "Uncontained ECC error", "gpu", "critical", RESET, p2p=True),
    _xid(119, "GSP RPC timeout", "gpu", "critical", RESET, p2p=True),
    _xid(120, "GSP error", "gpu", "critical", RESET, p2p=True),
    _xid(140, "Unrecovered ECC error", "gpu", "critical", RESET, p2p=True),
    *(_xid(code, f"NVLink {unit} error", "link", "warning", NVLINK5_ACTION, threshold=3,
           p2p=True)
      for code, unit in ((144, "SAW"), (145, "RLW"), (146, "TLW"), (147, "TREX"),
                         (148, "NVLPW_CTRL"), (149, "NETIR"), (150, "MSE"))),
    _sxid(12028, "Egress non-posted PRIV error", "warning",
          "non-fatal: watch for repeats; collect nvidia-bug-report if they continue",
          threshold=10),
    _sxid(20034, "LTSSM fault up (an NVSwitch link went down)", "critical",
          "restart Fabric Manager and reset the GPUs on the switch; check the link's tray"),
    _sxid(24007, "Sourcetrack TCEN0 crumbstore ECC DBE", "critical",
          "reset the NVSwitch and its GPUs (reboot); replace the board if it recurs"),
)
CATALOG: dict[tuple[str, int], CatalogEntry] = {(e.kind, e.code): e for e in _ENTRIES}
P2P_XIDS = frozenset(e.code for e in _ENTRIES if e.kind == "xid" and e.p2p)
NVLINK5_XIDS = frozenset(range(144, 151))


def lookup(kind: str, code: int, fatal: bool | None = None,
           subcode: int | None = None) -> CatalogEntry:
    """The entry for one event, its severity decided by the line's own word where the
    catalog says the line decides (Xids 144-150, SXids): fatal -> critical, non-fatal ->
    at most a warning. An unknown number is `info` with the catalog's URL."""
    entry = CATALOG.get((kind, code))
    if entry is None:
        entry = _unknown(kind, code, fatal)
    if (kind == "sxid" or code in NVLINK5_XIDS) and fatal is not None:
        entry = replace(entry, severity="critical" if fatal else
                        ("warning" if entry.severity != "info" else "info"))
    if subcode is not None and code in NVLINK5_XIDS:
        entry = replace(entry, name=f"{entry.name} (subcode {subcode})")
    return entry


def _unknown(kind: str, code: int, fatal: bool | None) -> CatalogEntry:
    if kind == "sxid":
        return _sxid(code, "NVSwitch error (not in peerwatch's catalog)",
                     "critical" if fatal else "warning",
                     "look the SXid up in the Fabric Manager user guide", threshold=10)
    return _xid(code, "not in peerwatch's catalog", "gpu", "info",
                "look the Xid up in NVIDIA's catalog")
