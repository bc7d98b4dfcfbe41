"""Open the event sources a fabric has: its own feed (simulated), or NVML + the kernel log.

One place decides, so `peerwatch probe`, the in-process probe and every demo host gather
events the same way. Each real source starts its own thread and never stops the agent: NVML
events that cannot be registered and a kernel log that cannot be read are a warning each,
and the probe runs on without them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from peerwatch.probes.agent.events import EventCollector
from peerwatch.probes.nvidia.kmsg import pci_key

log = logging.getLogger(__name__)


def _pci_index(fabric: Any) -> dict[str, int]:
    """PCI address (domain:bus:device) -> GPU index, for every GPU the fabric can name."""
    out: dict[str, int] = {}
    for i in range(fabric.gpu_count()):
        try:
            out[pci_key(fabric.gpu(i).pci_bus_id)] = i
        except Exception:  # noqa: BLE001 - a GPU lost at start: its lines stay unresolved
            continue
    return out


def open_events(fabric: Any, enabled: bool = True,
                kmsg_path: Path = Path("/dev/kmsg")) -> EventCollector:
    """A collector fed by the fabric's sources; `close()` it to stop their threads."""
    drain = getattr(fabric, "drain_events", None)
    if not enabled:
        return EventCollector()
    if drain is not None:
        return EventCollector(feeds=[drain])
    by_pci = _pci_index(fabric)
    collector = EventCollector(gpu_of_pci=lambda pci: by_pci.get(pci_key(pci)))
    nvml = getattr(fabric, "nvml_session", None)
    if nvml is not None:
        _start_nvml(collector, nvml())
        _start_kernel_log(collector, kmsg_path)
    return collector


def _start_nvml(collector: EventCollector, nvml: Any) -> None:
    from peerwatch.probes.nvidia.nvml_events import NvmlEvents  # NVML: GPU hosts only
    try:
        events = NvmlEvents(nvml, collector.on_nvml).start()
    except Exception as exc:  # noqa: BLE001 - no events: a warning, never a dead agent
        log.warning("NVML events unavailable (%s); Xids come from the kernel log only", exc)
        return
    collector.on_close(events.close)


def _start_kernel_log(collector: EventCollector, path: Path) -> None:
    from peerwatch.probes.nvidia.kernel_log import KernelLog  # only where it is read
    reader = KernelLog(collector.on_line, path).start()
    collector.on_close(reader.close)
