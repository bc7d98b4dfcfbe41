"""The kernel log's Xid and SXid lines: parsed from `/dev/kmsg` records (or journal text).

Why the kernel log as well as NVML's event: NVML's Xid event carries only the number and the
GPU, while the driver's line says which NVLink, the error registers and, for NVSwitch SXids
(which NVML never reports) and Blackwell's NVLink Xids 144-150, whether it was fatal. The
formats, as the driver prints them (NVIDIA's Xid catalog and Fabric Manager guide):

    NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
    NVRM: Xid (PCI:0000:b7:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error
        detected on link 2(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)
    NVRM: Xid (PCI:0008:06:00): 149, NETIR_LINK_EVT  Fatal  XC0 i0 Link 14 (0x021425c6 ...)
    nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 12028, Non-fatal, Link 32 egress non-posted
        PRIV error (First)

A /dev/kmsg record is `priority,sequence,microseconds-since-boot,flags;message`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from peerwatch.probes.report import EventKind

_XID = re.compile(r"NVRM: Xid \(PCI:(?P<pci>[0-9A-Fa-f:.]+)\): (?P<code>\d+)\s*,\s*(?P<rest>.*)")
_SXID = re.compile(r"(?P<switch>nvidia-nvswitch\d+): SXid \(PCI:(?P<pci>[0-9A-Fa-f:.]+)\): "
                   r"(?P<code>\d+)\s*,\s*(?P<rest>.*)")
_LINK = re.compile(r"\b[Ll]ink (\d{1,2})\b")
_REGISTERS = re.compile(r"\((0x[0-9A-Fa-f]+)")
_NON_FATAL = re.compile(r"\bnon-?fatal\b", re.IGNORECASE)
_FATAL = re.compile(r"\bfatal\b", re.IGNORECASE)
_RECORD = re.compile(r"^(\d+),(\d+),(\d+),[^;]*;(.*)$", re.DOTALL)
NVLINK5_XIDS = range(144, 151)  # Blackwell's NVLink Xids, each with a subcode in intrinfo


@dataclass(frozen=True)
class LogLine:
    """One Xid or SXid line, parsed; `pci` as printed (an Xid's lacks the function)."""

    kind: EventKind
    code: int
    pci: str
    message: str
    link: int | None = None
    switch: str | None = None
    fatal: bool | None = None
    subcode: int | None = None


def severity_word(text: str) -> bool | None:
    """True for a line that says Fatal, False for Non-fatal, None when it says neither."""
    if _NON_FATAL.search(text):
        return False
    return True if _FATAL.search(text) else None


def nvlink5_subcode(text: str) -> int | None:
    """Xids 144-150: the subcode is bits 20-25 of the first register (intrinfo), as NVIDIA's
    catalog decodes it; None when the line has no register."""
    m = _REGISTERS.search(text)
    return None if m is None else (int(m.group(1), 16) >> 20) & 0x3F


def parse_line(text: str) -> LogLine | None:
    """The Xid or SXid a kernel message reports; None for any other message."""
    m = _XID.search(text)
    if m is not None:
        code, rest = int(m.group("code")), m.group("rest").strip()
        link = _LINK.search(rest)
        return LogLine(EventKind.XID, code, m.group("pci"), text.strip()[:2000],
                       link=int(link.group(1)) if link else None, fatal=severity_word(rest),
                       subcode=nvlink5_subcode(rest) if code in NVLINK5_XIDS else None)
    m = _SXID.search(text)
    if m is not None:
        rest = m.group("rest")
        link = _LINK.search(rest)
        return LogLine(EventKind.SXID, int(m.group("code")), m.group("pci"), text.strip()[:2000],
                       link=int(link.group(1)) if link else None, switch=m.group("pci"),
                       fatal=severity_word(rest.split(",")[0]))
    return None


@dataclass(frozen=True)
class KmsgRecord:
    sequence: int
    since_boot: timedelta
    message: str


def parse_record(raw: bytes | str) -> KmsgRecord | None:
    """One /dev/kmsg record; None for a continuation line or anything unreadable."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    m = _RECORD.match(text.rstrip("\n"))
    if m is None:
        return None
    return KmsgRecord(int(m.group(2)), timedelta(microseconds=int(m.group(3))),
                      m.group(4).split("\n", 1)[0])


def wall_time(since_boot: timedelta, booted_at: datetime) -> datetime:
    """A record's time on the wall clock, from the boot time the reader estimated."""
    return booted_at + since_boot


def pci_key(pci: str) -> str:
    """'0000:91:00' or '00000000:91:00.0' -> '0000:91:00': domain, bus, device (no
    function, 4-digit domain, lower case), how an Xid line and NVML can be compared."""
    parts = pci.lower().split(":")
    if len(parts) < 3:
        return pci.lower()
    domain = parts[-3][-4:].rjust(4, "0")
    return f"{domain}:{parts[-2]}:{parts[-1].split('.')[0]}"
