"""What each Xid and SXid means to peerwatch: pure data and a pure lookup.

Sources (the catalog version every answer cites):
- Xids: NVIDIA's Xid catalog, "Analyzing Xid errors", XID_URL, sheet "Catalog" of its
  spreadsheet as of 2025-10-29 (the rows: `xid_table.py`, which says how they were taken):
  every Xid 1-172 is here with its meaning, mnemonic, NVIDIA's immediate and investigatory
  resolution buckets, and an ordered action chain built from them (drain -> reset the GPU ->
  restart the OS -> service, as NVIDIA's health validation orders its actions);
- SXids: NVIDIA Fabric Manager user guide, "NVSwitch SXid errors", SXID_URL (R580).
Checked here: every Xid number and name of the first 24 entries against the open GPU kernel
module's `nverror.h` (48 ROBUST_CHANNEL_GPU_ECC_DBE ... 74 NVLINK_ERROR, 79
GPU_HAS_FALLEN_OFF_THE_BUS, 140 UNRECOVERABLE_ECC_ERROR_ESCAPE, 144-150
NVLINK_SAW/RLW/TLW/TREX/NVLPW_CTRL/NETIR/MSE_ERROR); SXids 12028 (non-fatal egress
non-posted PRIV error) and 20034 (fatal LTSSM fault up) against real kmsg lines; 24007's
name is the Fabric Manager guide's, not re-checked. NOT checked against the source: the
catalog's "Xid 154 linkage" column (not in the transcription used): `linkage` is peerwatch's
reading (an Xid whose immediate bucket is a GPU reset or a reboot may set a recovery action,
which Xid 154 then announces), and the SXid list beyond these three (not transcribed here).
Subcodes: only those of Xids 144-150 are shown (the line's intrinfo bits, not decoded).

`object` says what the event is about (a GPU, one NVLink, an NVSwitch); `severity` what one
event alone is: `info` (shown only), `warning` (an alert, the verdict unchanged) or
`critical` (the object is faulty at once). `threshold` turns repeats into a fault: that many
events of the object within `window_s` (operators ask for count/window thresholds before an
event alone makes a node fault). Blackwell's NVLink Xids 144-150 carry their own severity
word in the line, which decides: a non-fatal one is never called fatal. Entries peerwatch
did not judge by hand take their severity from NVIDIA's immediate bucket: a GPU reset, a
reboot or a VM restart is critical, "XID_154" and "CHECK_MECHANICALS" a warning, the rest
(restart the application, ignore, contact support) info.

`p2p` marks the classes that bear on peer copies: the GPU off the bus (79), its memory
(ECC: 48, 64, 94, 95, 140), its firmware stopped (62 halt, 119/120 GSP) and its NVLinks (74,
136, 144-150, 155). One of these logged by one end of a pair whose copies fail or run slow
explains the pair (`app/analysis/xid_attribution.py`); the application's faults (13, 31, 43,
45) and notices that stop nothing (61, 63, 92) say nothing about P2P.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from peerwatch.app.analysis.xid_chains import chain_of, linkage_of, severity_of
from peerwatch.app.analysis.xid_table import CATALOG_DATE, XID_ROWS

XID_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
SXID_URL = ("https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/"
            "index.html#nvswitch-sxid-errors")
CATALOG_VERSION = (f"NVIDIA Xid catalog as of {CATALOG_DATE} (R580 drivers); "
                   "Fabric Manager user guide R580")

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
    mnemonic: str = ""  # NVIDIA's (nverror.h) name, e.g. NVLINK_ERROR
    immediate: str = ""  # the catalog's immediate resolution bucket, e.g. RESET_GPU
    investigatory: str = ""  # ... and its investigatory one
    chain: tuple[str, ...] = ()  # what to do, in order (xid_chains.py)
    linkage: str = "none"  # how it relates to Xid 154 (peerwatch's reading: unchecked)

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
    # Those the EKS node monitoring agent treats as well known, and the catalog's newest
    # (162-172 have no resolution bucket in the transcription: the action is peerwatch's).
    _xid(46, "GPU stopped processing (GPU timeout)", "gpu", "critical", RESET),
    _xid(54, "Auxiliary power is not connected to the GPU board", "gpu", "warning",
         "check the board's auxiliary power cables; the GPU runs power-limited until then"),
    _xid(109, "Context switch timeout", "gpu", "critical", RESET),
    _xid(110, "Security fault", "gpu", "critical", RESET),
    _xid(136, "NVLink training failed", "gpu", "critical",
         f"{RESET}; then look at the link's signal integrity (cable, tray, board)", p2p=True),
    _xid(142, "NVENC3 error", "gpu", "info", "usually the application"),
    _xid(143, "GPU initialization error", "gpu", "critical", RESET),
    _xid(151, "Key rotation error (confidential computing)", "gpu", "critical",
         "drain the node and restart the VM"),
    _xid(154, "GPU recovery action changed", "gpu", "warning",
         "read the GPU's recovery action (nvidia-smi -q) and follow it; peerwatch reads it "
         "itself and pages GPURecoveryActionRequired"),
    _xid(155, "NVLink software-defined error", "gpu", "critical", RESET, p2p=True),
    _xid(156, "Resource retirement event", "gpu", "warning",
         "reset the GPU when idle, so the retirement takes effect", threshold=3),
    _xid(157, "Resource retirement failure", "gpu", "critical",
         f"{RESET}; replace the GPU if retirement keeps failing"),
    _xid(158, "GPU fatal timeout", "gpu", "critical", RESET),
    *(_xid(code, name, "gpu", "info", "shown only: the power smoothing circuitry's state")
      for code, name in ((162, "Power smoothing circuitry re-engaged"),
                         (163, "Power smoothing circuitry disengaged"))),
    _xid(164, "Power smoothing circuitry low lifetime", "gpu", "warning",
         "plan the board's replacement: its power smoothing circuitry nears end of life"),
    _xid(165, "Power smoothing circuitry lifetime exhausted", "gpu", "warning",
         "replace the board: its power smoothing circuitry is exhausted"),
    *(_xid(code, name, "gpu", "info", "check the confidential computing setup")
      for code, name in ((166, "NVLink traffic before encryption was set up (CC)"),
                         (170, "Interrupt seen in confidential computing mode"))),
    _xid(167, "PCIe fatal timeout", "gpu", "critical",
         "drain the host; check PCIe seating and the slot; reboot", p2p=True),
    _xid(168, "Reduced GPU memory capacity (errors in the write-protected region)", "gpu",
         "critical", f"{RESET}; replace the GPU if it recurs"),
    _xid(169, "Internal micro-controller halt (SEC2)", "gpu", "critical", RESET, p2p=True),
    *(_xid(code, name, "gpu", "critical", f"{RESET}; replace the GPU if it recurs", p2p=True)
      for code, name in ((171, "Uncorrectable DRAM error (with Xid 48)"),
                         (172, "Uncorrectable SRAM error (with Xid 48)"))),
    _sxid(12028, "Egress non-posted PRIV error", "warning",
          "non-fatal: watch for repeats; collect nvidia-bug-report if they continue",
          threshold=10),
    _sxid(20034, "LTSSM fault up (an NVSwitch link went down)", "critical",
          "restart Fabric Manager and reset the GPUs on the switch; check the link's tray"),
    _sxid(24007, "Sourcetrack TCEN0 crumbstore ECC DBE", "critical",
          "reset the NVSwitch and its GPUs (reboot); replace the board if it recurs"),
)


def _from_table(row: tuple[int, str, str, str, str], curated: CatalogEntry | None
                ) -> CatalogEntry:
    """The entry for one catalog row: peerwatch's judgement where it made one (its name,
    object, severity, action, threshold), NVIDIA's buckets and the chain either way."""
    code, mnemonic, meaning, immediate, investigatory = row
    entry = curated or _xid(code, meaning, "gpu", severity_of(immediate), "")
    critical = entry.severity == "critical"
    chain = chain_of(immediate, investigatory, critical) or (entry.action,)
    return replace(entry, mnemonic=mnemonic, immediate=immediate,
                   investigatory=investigatory, chain=chain, linkage=linkage_of(immediate),
                   action=entry.action or " -> ".join(chain))


_CURATED = {(e.kind, e.code): e for e in _ENTRIES}
CATALOG: dict[tuple[str, int], CatalogEntry] = {
    **{("xid", row[0]): _from_table(row, _CURATED.get(("xid", row[0]))) for row in XID_ROWS},
    **{k: replace(e, chain=(e.action,)) for k, e in _CURATED.items() if k[0] == "sxid"},
}
P2P_XIDS = frozenset(e.code for e in CATALOG.values() if e.kind == "xid" and e.p2p)
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
