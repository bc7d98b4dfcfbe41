"""Fold the GPUs and links behind a lost NVSwitch (a board's switch, a rack's switch tray)
into the switch's fault, so that one fault pages once, from the object at fault.

Why: a fatal SXid on an NVSwitch takes down the ports of every GPU wired to it. Judged one
by one, each port is an `NVLinkDown`, each GPU an `NVLinkWidthReduced`, and the fabric's
`limited_capacity` health read as "not ready": 25 critical alerts for one switch on an HGX
board, ~234 on an NVL72 rack. What the switch explains, found here, is judged once more as
what it is: the GPU's ports lost *with the switch* (finding kind `switch`), its bandwidth
reduced, its pairs still judged by what they measure. A GPU that keeps some NVLinks up is not
cut off: the scheduler offers it, saying its bandwidth is reduced; one with none up is.

A down port is the switch's when a fatal switch fault (`xid_judge.py`, level `fault`,
object `switch`) is held on the host and the port faced an NVSwitch (or NVML no longer says
what it faced: a port whose switch is gone reads unknown on real hosts). The server cannot
tell which switch a port was wired to (NVML names no switch on a down port), so with two
switch faults held the first one named is credited: either explains the ports. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from peerwatch.app.analysis.xid_judge import EventFinding
from peerwatch.probes.report import LinkState, NvLinkPort, RemoteType

SWITCH_FACING = (RemoteType.NVSWITCH, RemoteType.UNKNOWN)


def switch_faults(events: Sequence[EventFinding] | None) -> list[EventFinding]:
    """The fault-level NVSwitch findings held now, by switch name."""
    return sorted((f for f in events or () if f.level == "fault"
                   and f.entry.object == "switch"), key=lambda f: f.switch or "")


def switch_name(f: EventFinding) -> str:
    return f.switch or "unknown"


def folded_gpus(ports_by_gpu: Mapping[int, Sequence[NvLinkPort]],
                events: Sequence[EventFinding] | None) -> dict[int, str]:
    """GPU -> the NVSwitch whose fault explains its down ports: every down port of the GPU
    faced an NVSwitch, while a fatal switch fault is held. GPUs with no port down are not
    listed (nothing to explain)."""
    held = switch_faults(events)
    if not held:
        return {}
    out = {}
    for gpu, ports in ports_by_gpu.items():
        down = [p for p in ports if p.state is not LinkState.UP]
        if down and all(p.remote_type in SWITCH_FACING for p in down) \
                and any(p.remote_type is RemoteType.NVSWITCH for p in ports):
            out[gpu] = switch_name(held[0])
    return out


def switch_title(f: EventFinding) -> str:
    """"NVSwitch tray4 (SXid 20034)": how the pages and reasons name a switch fault."""
    return f"NVSwitch {switch_name(f)} ({f.entry.label})"


REDUCING = ("switch", "capacity")  # findings that cut a GPU's bandwidth, not the GPU off
REDUCED = "reduced"  # the kind a GPU carries while those are all that is wrong with it


def reduced_only(findings: Sequence[tuple[str, str]], problems: Sequence[str]) -> bool:
    """Every problem of a degraded GPU is a fabric finding (kind, text) that only reduces its
    bandwidth: the scheduler offers it, saying so (kind `reduced`)."""
    texts = {text for kind, text in findings if kind in REDUCING}
    return bool(problems) and all(p in texts for p in problems)


def offerable(verdict: str, kinds: Sequence[str]) -> bool:
    """A GPU a job may use: healthy, or degraded by a lost switch's reduced bandwidth alone.
    One predicate for /scheduler/hosts, /scheduler/placement and /scheduler/cliques."""
    return verdict == "healthy" or (verdict == "degraded" and REDUCED in kinds)
