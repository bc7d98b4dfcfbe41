"""Print, per GPU, what the probe reads of its clocks and of its GPUDirect RDMA readiness.

Run it on a real GPU host (bench/gpu/checks.sh does, as step `evidence`):

    python bench/gpu/evidence.py

Per GPU: the clocks-event reasons NVML answers, decoded with the header's names (which of
them are throttles: power, thermal, HW slowdown), SM clock against its maximum, power draw
against the enforced limit, temperature against the slowdown threshold, and the violation
counters read twice a second apart (their delta is what a sweep's label uses). Then the RDMA
readiness verdict with what it was read from: peermem (loaded, registered with ib_core),
dma-buf, the nearest NIC and its port, the PCIe bridges above the GPU and each one's ACS
control (or "no ACS capability", or "unreadable"). On the one-H200 VM the expected reading
is: gpu_idle only, no NIC, no peermem (dma-buf possible), the GPU on the root bus with no
ACS capability: not ready, said plainly. Exit status 0 when every GPU was read.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from peerwatch.probes.clocks import decode, throttle_kinds  # noqa: E402
from peerwatch.probes.errors import FabricUnavailable  # noqa: E402
from peerwatch.probes.nvidia.rdma import RdmaReader, acs_names  # noqa: E402
from peerwatch.probes.nvidia.sysfs import Sysfs  # noqa: E402


def clocks_lines(nvml: Any, gpu: int, pause_s: float = 1.0) -> list[str]:
    first = nvml.clocks(gpu)
    time.sleep(pause_s)
    c = nvml.clocks(gpu)
    mask = c.reasons
    kinds = throttle_kinds(mask or 0)
    lines = [
        f"  clocks-event reasons: {mask!r} = {decode(mask) if mask is not None else 'unread'}"
        f" (supported {c.reasons_supported!r}); throttle: {', '.join(kinds) or 'none'}",
        f"  SM {c.sm_clock_mhz} of {c.sm_clock_max_mhz} MHz; power "
        f"{_w(c.power_mw)} of {_w(c.power_limit_mw)} W; {c.temperature_c} C "
        f"(slowdown {c.slowdown_temperature_c} C)",
    ]
    for name in ("violation_power_ns", "violation_thermal_ns"):
        a, b = getattr(first, name), getattr(c, name)
        delta = None if a is None or b is None else b - a
        lines.append(f"  {name}: {b!r} (+{delta!r} ns in {pause_s:g} s)")
    return lines


def _w(mw: int | None) -> str:
    return "?" if mw is None else f"{mw / 1000:.0f}"


def rdma_lines(nvml: Any, sysfs: Sysfs, gpu: int) -> list[str]:
    info = nvml.gpu(gpu)
    reader = RdmaReader(sysfs)
    lines = []
    path = sysfs.pci_path(info.pci_bus_id)
    lines.append(f"  sysfs path: {'/'.join(path) if path else 'not found'}")
    for bdf in [*(path or ())[1:]]:
        found = reader.acs_of(bdf)
        if found is None:
            what = "config unreadable (or shorter than the extended space)"
        elif found[1] is None:
            what = "no ACS capability"
        else:
            what = f"ACS control {found[1]:#06x} {acs_names(found[1]) or ['all off']}"
        lines.append(f"  {bdf}: {what}")
    nics = [n.name for n in sysfs.rdma_nics()]
    lines.append(f"  /sys/class/infiniband: {nics or 'none'}; peermem loaded "
                 f"{sysfs.peermem_loaded()!r}, registered with ib_core "
                 f"{reader.peermem_registered()!r}; dma-buf {reader.dmabuf()!r}")
    try:
        from peerwatch.app.analysis.rdma import judge_rdma
    except ImportError as exc:  # the server's modules are not installed here
        lines.append(f"  verdict: not judged ({exc})")
        return lines
    v = judge_rdma(gpu, info.rdma)
    lines += [f"  verdict: {v.readiness.value}: {v.reason}", f"  action: {v.action or '-'}",
              f"  read: {v.read}"]
    return lines


def main(nvml: Any = None, sysfs: Sysfs | None = None, pause_s: float = 1.0) -> int:
    from peerwatch.probes.nvidia.nvml import Nvml

    sysfs = sysfs or Sysfs()
    try:
        nvml = nvml or Nvml(sysfs=sysfs)
    except FabricUnavailable as exc:  # no driver here: say so, as every GPU bench does
        print(f"skipped: no GPU here ({type(exc).__name__}: {exc})")
        return 0
    ok = True
    try:
        print(f"driver {nvml.driver_version()}, {nvml.gpu_count()} GPU(s)")
        for g in range(nvml.gpu_count()):
            print(f"GPU{g} {nvml.bus_id(g)}")
            try:
                print("\n".join(clocks_lines(nvml, g, pause_s) + rdma_lines(nvml, sysfs, g)))
            except Exception as exc:  # noqa: BLE001 - say what failed, go on with the next
                ok = False
                print(f"  failed: {type(exc).__name__}: {exc}")
    finally:
        nvml.close()
    return 0 if ok else 1


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    sys.exit(main())
