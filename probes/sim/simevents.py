"""The Xid/SXid events a simulated host's faults make, as a real host's driver would log them.

Why here and not in the faults' consumers: the events must agree with what the fabric
reports, so they come from the same change. A link that goes down (`LinksDown`, a lost switch
tray, too few NVLinks trained) logs an Xid 74 naming that link; `GpuLost` logs Xid 79 on its
GPU; `SwitchTrayLost` a fatal SXid on the tray's NVSwitch; `LinkXid` repeats Xid 74 on one
link that stays up (a marginal link), on the fabric's clock; `SwitchSxid` one SXid of the
host's own NVSwitch; `GpuRecoveryAction` the Xid 154 announcing it. Events wait here until
the report builder takes them, stamped then with the report's wall time (the backfilled
history has its own clock).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from peerwatch.probes.gpu_health import RECOVERY_ACTIONS
from peerwatch.probes.report import EventKind, EventSource, FabricEvent
from peerwatch.probes.sim.faults import (
    Fault,
    GpuLost,
    GpuRecoveryAction,
    LinkXid,
    NvSwitchLost,
    SwitchSxid,
    SwitchTrayLost,
)

PortKey = tuple[int, int]


@dataclass(frozen=True)
class Pending:
    kind: EventKind
    code: int
    message: str
    gpu: int | None = None
    pci: str | None = None
    link: int | None = None
    switch: str | None = None
    fatal: bool | None = None
    count: int = 1

    def stamped(self, at: datetime) -> FabricEvent:
        return FabricEvent(kind=self.kind, code=self.code, at=at,
                           sources=[EventSource.SIMULATED], gpu=self.gpu, pci_bus_id=self.pci,
                           link=self.link, switch=self.switch, fatal=self.fatal,
                           count=self.count, message=self.message)


def xid_line(pci: str, code: int, text: str) -> str:
    """The driver's line for an Xid, PCI address in its form (domain:bus:device)."""
    short = pci.lower().rsplit(".", 1)[0][-10:]
    return f"NVRM: Xid (PCI:{short}): {code}, pid='<unknown>', name=<unknown>, {text}"


def link_down(gpu: int, link: int, pci: str) -> Pending:
    text = f"NVLink: fatal error detected on link {link}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"
    return Pending(EventKind.XID, 74, xid_line(pci, 74, text), gpu=gpu, pci=pci, link=link)


def on_inject(fault: Fault, pci_of: dict[int, str]) -> list[Pending]:
    """Events a fault logs the moment it goes in (links going down are `link_down`'s)."""
    match fault:
        case GpuLost(gpu=g):
            return [Pending(EventKind.XID, 79, xid_line(pci_of[g], 79, "GPU has fallen off "
                                                        "the bus."), gpu=g, pci=pci_of[g])]
        case SwitchTrayLost(tray=t):
            name = f"tray{t}"
            return [Pending(EventKind.SXID, 20034, f"nvidia-nvswitch{t}: SXid ({name}): 20034, "
                            "Fatal, Link 0 LTSSM Fault Up", switch=name, link=0, fatal=True)]
        case GpuRecoveryAction(gpu=g, action=action, xid=code) if code is not None:
            value = RECOVERY_ACTIONS.index(action)
            text = f"GPU recovery action changed from 0x0 (None) to {value:#x} ({action})"
            return [Pending(EventKind.XID, code, xid_line(pci_of[g], code, text), gpu=g,
                            pci=pci_of[g])]
        case NvSwitchLost(switch=s, links=links):
            name = f"nvswitch{s}"
            return [Pending(EventKind.SXID, 20034, f"nvidia-nvswitch{s}: SXid ({name}): 20034, "
                            f"Fatal, Link {links[0]} LTSSM Fault Up", switch=name,
                            link=links[0], fatal=True)]
        case SwitchSxid(switch=s, sxid=code, fatal=fatal, link=link):
            word = "Fatal" if fatal else "Non-fatal"
            name = f"nvswitch{s}"
            return [Pending(EventKind.SXID, code, f"nvidia-nvswitch{s}: SXid ({name}): {code}, "
                            f"{word}, Link {link} egress non-posted PRIV error (First)",
                            switch=name, link=link, fatal=fatal)]
    return []


class SimEvents:
    """Pending events of one simulated host; `LinkXid` repeats counted on the fabric clock."""

    def __init__(self) -> None:
        self.pending: list[Pending] = []
        self._repeat_from: dict[LinkXid, float] = {}

    def injected(self, faults: tuple[Fault, ...], pci_of: dict[int, str], now: float,
                 went_down: list[PortKey]) -> None:
        for f in faults:
            self.pending += on_inject(f, pci_of)
            if isinstance(f, LinkXid):
                self.pending.append(link_down(f.gpu, f.link, pci_of[f.gpu]))
                self._repeat_from[f] = now
        self.pending += [link_down(g, link, pci_of[g]) for g, link in went_down]

    def cleared(self, faults: tuple[Fault, ...]) -> None:
        for f in faults:
            if isinstance(f, LinkXid):
                self._repeat_from.pop(f, None)

    def advance(self, now: float, pci_of: dict[int, str]) -> None:
        """Repeat each LinkXid every `every_s` of the fabric's clock since the last one."""
        for f, since in list(self._repeat_from.items()):
            n = int((now - since) // f.every_s)
            if n > 0:
                self.pending.append(replace(link_down(f.gpu, f.link, pci_of[f.gpu]), count=n))
                self._repeat_from[f] = since + n * f.every_s

    def take(self, at: datetime) -> list[FabricEvent]:
        out, self.pending = [e.stamped(at) for e in self.pending], []
        return out
