"""Print what the probe reads of this host's GPU fabric, and the verdict, in a few lines.

Run it on a real GPU host (the one-H200 machine without NVLink, the 2 x H200 NVSwitch pair):

    python bench/gpu/fabric_check.py

It needs nvidia-ml-py and pydantic (the probe's own needs); the verdict also needs the
server's analysis modules (pydantic-settings), and is skipped, saying why, where they are not
installed. The reading runs in a child process, so even an NVML call that kills its process
(nvmlDeviceGetGpuFabricInfoV did, on the one-H200 machine: ../shared/REFERENCE.md section 6)
shows up here as a line naming the signal, never as a crash of this script. Exit status 0
when the reading completed, 1 when it did not.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def read_fabric(nvml: Any = None, runtime: Any = None) -> dict[str, Any]:
    """The child's work: the probe's readings as JSON-able values."""
    from peerwatch.probes.nvidia.host_runtime import HostRuntime
    from peerwatch.probes.nvidia.nvml import Nvml

    nvml = nvml or Nvml()
    runtime = runtime or HostRuntime()
    try:
        gpus, ports = {}, {}
        for g in range(nvml.gpu_count()):
            gpus[g] = nvml.gpu(g).model_dump(mode="json")
            ports[g] = [p.model_dump(mode="json") for p in nvml.nvlinks(g)]
        return {"driver": nvml.driver_version(), "gpus": gpus, "ports": ports,
                "fabric_manager": runtime.fabric_manager().model_dump(mode="json"),
                "driver_loaded_at": str(runtime.driver_loaded_at())}
    finally:
        nvml.close()


def describe(data: dict[str, Any]) -> list[str]:
    lines = [f"driver {data['driver']}, {len(data['gpus'])} GPU(s); Fabric Manager: "
             f"{data['fabric_manager']}; driver loaded {data['driver_loaded_at']}"]
    for g, info in data["gpus"].items():
        ports = data["ports"][g]
        up = sum(p["state"] == "up" for p in ports)
        remotes = sorted({p["remote_type"] for p in ports})
        lines.append(f"GPU{g} {info['name']}: {up}/{len(ports)} NVLinks up "
                     f"(far ends {remotes}); fabric {info['switch_fabric']}")
    return lines


def verdict(data: dict[str, Any]) -> list[str]:
    try:
        from peerwatch.app.analysis.fabric_state import judge_host_fabric
        from peerwatch.probes.report import FabricManagerInfo, GpuInfo, NvLinkPort
    except ImportError as exc:
        return [f"verdict: not computed here ({exc}); install the server's requirements"]
    gpus = {int(g): GpuInfo.model_validate(v) for g, v in data["gpus"].items()}
    ports = {int(g): [NvLinkPort.model_validate(p) for p in v] for g, v in data["ports"].items()}
    fm = FabricManagerInfo.model_validate(data["fabric_manager"])
    result = judge_host_fabric("this host", gpus, ports, (), fm)
    return [f"verdict: {result.verdict.value}: {result.reason}"] + [
        f"  GPU{v.gpu} {v.verdict.value}: {v.reason}" for v in result.gpus]


def main() -> int:
    if sys.argv[1:] == ["--child"]:
        from peerwatch.probes.errors import FabricUnavailable
        try:
            print(json.dumps(read_fabric()))
        except FabricUnavailable as exc:  # no GPU here: a skip, as every GPU bench says
            print(json.dumps({"unavailable": str(exc)}))
        return 0
    try:
        child = subprocess.run([sys.executable, __file__, "--child"], capture_output=True,
                               text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"reading the fabric did not finish: {exc}")
        return 1
    if child.returncode != 0:
        how = (f"killed by {signal.Signals(-child.returncode).name}" if child.returncode < 0
               else f"exit status {child.returncode}")
        tail = (child.stderr.strip().splitlines() or ["(no output)"])[-1]
        print(f"reading the fabric failed: {how}: {tail}")
        return 1
    try:
        data = json.loads(child.stdout.strip().splitlines()[-1])
        if "unavailable" in data:
            print(f"skipped: no NVIDIA GPU here ({data['unavailable']})")
            return 0
        for line in describe(data) + verdict(data):
            print(line)
    except Exception as exc:  # noqa: BLE001 - a report script: say what broke, never crash
        print(f"could not show the reading: {type(exc).__name__}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    import argparse

    from bench.helpers.cli import parser

    options = parser(__doc__, __file__)
    options.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # the reading
    options.parse_args()
    sys.exit(main())
