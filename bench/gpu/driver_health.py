"""Every read of the driver's own verdicts on this host, with NVML's raw answers recorded.

Run it on a real GPU host (bench/gpu/checks.sh does, as step `driver`):

    OUT=/tmp/peerwatch-gpu python bench/gpu/driver_health.py

Through the probe's own seam (`probes/nvidia/nvml.py` is handed a recording wrapper of the
real pynvml, so this script imports no pynvml itself): per GPU the recovery action, ECC
counts, row remapping, retired pages; from sysfs the PCIe AER counters of the GPU and its
upstream bridge; the host's IMEX state. It prints one line per read (the value, or
"not supported: <reason>" / "failed: <reason>") and writes every raw answer to
$OUT/driver_health.json (OUT unset: a new temporary folder), in the format the CPU tests
replay (tests/probes/nvidia/replay_pynvml.py, tests/fixtures/driver_health/): the NVML calls
made and what each answered or raised, the constants they used, the sysfs AER files' text
and each GPU's PCI path, and what the probe made of it all. Exit status 0 when every GPU
answered every read with a value or a clean "not supported".
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from peerwatch.probes.errors import FabricUnavailable, NotSupported  # noqa: E402
from peerwatch.probes.gpu_health import READS  # noqa: E402
from peerwatch.probes.nvidia.aer import FILES, device_dir, upstream_bridge  # noqa: E402
from peerwatch.probes.nvidia.imex import imex_status  # noqa: E402
from peerwatch.probes.nvidia.nvml import Nvml, load_pynvml  # noqa: E402
from peerwatch.probes.nvidia.sysfs import Sysfs  # noqa: E402

FORMAT = "peerwatch driver_health 1"
CONSTANT_PREFIXES = ("NVML_ERROR_", "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION",
                     "NVML_MEMORY_ERROR_TYPE_", "NVML_VOLATILE_ECC", "NVML_AGGREGATE_ECC",
                     "NVML_PAGE_RETIREMENT_CAUSE_", "NVML_GPU_RECOVERY_ACTION_",
                     "NVML_VALUE_TYPE_")


def plain(value: Any) -> Any:
    """An answer as JSON: ctypes structures and unions by their fields, bytes as text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    fields = getattr(value, "_fields_", None)
    if fields is not None:
        return {f[0]: plain(getattr(value, f[0])) for f in fields}
    if isinstance(value, ctypes.Array):  # field values: ctypes instances have a __dict__ too
        return [plain(v) for v in value]
    if hasattr(value, "__dict__"):
        return {k: plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    try:
        return [plain(v) for v in value]  # a ctypes array
    except TypeError:
        return repr(value)


class Recorder:
    """pynvml as the probe sees it, each nvml* call answered by the wrapped module and
    written down (a GPU's handle as {"gpu": index})."""

    def __init__(self, module: Any) -> None:
        self._module = module
        self._handles: dict[int, int] = {}
        self.calls: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if not name.startswith("nvml") or not callable(value):
            return value

        def call(*args: Any) -> Any:
            entry: dict[str, Any] = {"fn": name, "args": [self._arg(a) for a in args]}
            self.calls.append(entry)
            try:
                result = value(*args)
            except self._module.NVMLError as exc:
                entry |= {"error": getattr(exc, "value", None), "error_text": str(exc)}
                raise
            if name == "nvmlDeviceGetHandleByIndex":
                self._handles[id(result)] = int(args[0])
                entry["value"] = {"handle": int(args[0])}
            else:
                entry["value"] = plain(result)
            return result

        return call

    def _arg(self, value: Any) -> Any:
        if id(value) in self._handles:
            return {"gpu": self._handles[id(value)]}
        if isinstance(value, list | tuple):
            return [self._arg(v) for v in value]
        return plain(value)

    def constants(self) -> dict[str, int]:
        return {name: int(getattr(self._module, name)) for name in dir(self._module)
                if name.startswith(CONSTANT_PREFIXES)
                and isinstance(getattr(self._module, name), int)}


def aer_files(sysfs: Sysfs, bus_id: str) -> dict[str, dict[str, str | None]]:
    """The raw text of each AER file of the GPU and its upstream bridge (None: unreadable)."""
    out: dict[str, dict[str, str | None]] = {}
    device = device_dir(sysfs, bus_id)
    bridge = upstream_bridge(device) if device else None
    for where in (d for d in (device, bridge) if d is not None):
        texts: dict[str, str | None] = {}
        for name, _ in FILES.values():
            try:
                texts[name] = (where / name).read_text()
            except OSError:
                texts[name] = None
        out[where.resolve().name] = texts
    return out


def read_gpu(nvml: Nvml, sysfs: Sysfs, gpu: int) -> dict[str, Any]:
    bus = nvml.bus_id(gpu)
    health = nvml.driver_health(gpu)
    try:
        aer: dict[str, Any] = nvml.pcie_aer(gpu).model_dump(mode="json")
    except NotSupported as exc:
        aer = {"not_supported": str(exc)}
    return {"index": gpu, "bus_id": bus, "pci_path": list(sysfs.pci_path(bus) or ()),
            "health": health.model_dump(mode="json"), "aer": aer,
            "sysfs": aer_files(sysfs, bus)}


def record(module: Any, sysfs: Sysfs, imex_root: str | Path = "/") -> dict[str, Any]:
    """Every read of every GPU, through `Nvml` over a recording `module`."""
    rec = Recorder(module)
    nvml = Nvml(module=rec, sysfs=sysfs)
    try:
        gpus = [read_gpu(nvml, sysfs, g) for g in range(nvml.gpu_count())]
        driver = nvml.driver_version()
    finally:
        nvml.close()
    return {"format": FORMAT, "hand_written": False,
            "recorded_at": datetime.now(UTC).isoformat(), "host": socket.gethostname(),
            "driver_version": driver, "constants": rec.constants(), "nvml_calls": rec.calls,
            "gpus": gpus, "imex": imex_status(imex_root).model_dump(mode="json")}


def lines(found: dict[str, Any]) -> tuple[list[str], bool]:
    """The table (read -> value or reason) and whether every read was clean."""
    out, clean = [f"driver {found['driver_version']}"], True
    for g in found["gpus"]:
        health, unread = g["health"], g["health"]["unread"]
        for read in READS:
            shown = unread.get(read, health.get(read))
            clean &= not str(shown).startswith("failed")
            out.append(f"GPU{g['index']} {read:16} {shown}")
        aer = g["aer"]
        shown = aer.get("not_supported") or {k: aer.get(k) for k in
                                             ("device", "bridge", "bridge_counts", "unread")}
        out.append(f"GPU{g['index']} {'pcie_aer':16} {shown}")
    imex = found["imex"]
    seen = f"present: {imex.get('state')}" if imex["present"] else "not present"
    out.append(f"imex {seen} ({imex.get('how')})")
    return out, clean


def main() -> int:
    try:
        found = record(load_pynvml(), Sysfs())
    except FabricUnavailable as exc:  # no driver here: say so, as every GPU bench does
        print(f"skipped: no GPU here ({type(exc).__name__}: {exc})")
        return 0
    out_dir = Path(os.environ.get("OUT") or tempfile.mkdtemp(prefix="driver-health-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "driver_health.json"
    path.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    table, clean = lines(found)
    print("\n".join(table))
    print(f"raw answers: {path}")
    return 0 if clean else 1


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    sys.exit(main())
