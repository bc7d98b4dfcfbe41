"""How long a job snapshot takes on this GPU host: the budget is one second (a Slurm prolog).

    python3 bench/gpu/snapshot.py           (on the device: WHL=.whl, see bench/gpu/_env.sh)

Each way of reading runs in its own child process, five times, and the median is printed;
an NVML call that kills its process shows up as a line, never as a crash of this script.
  cli      `python -m peerwatch.app.cli snapshot --json --fabric nvml`, the whole command as a
           prolog
           runs it: interpreter start, imports, NVML start, the reading (wall time), and
           the reading alone as the snapshot's own `took_s`
  quick    take_snapshot on a quick fabric, GPUs read in parallel (what the CLI does)
  serial   the same, one GPU after another
  probe    the reference: the probe agent's inventory + counter pass (collect_inventory,
           collect_counters) on the full real fabric, CuPy included (first call excluded)
Without a GPU (or NVML) it prints "skipped: ..." and exits 0. The table comes last.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RUNS = 5
CHILD_TIMEOUT_S = 120
BUDGET_S = 1.0


def _child(mode: str) -> dict[str, Any]:
    """One way of reading, RUNS times in this process: {"times": [...], "gpus": n, ...}."""
    from peerwatch.probes.inventory import collect_counters, collect_inventory
    from peerwatch.probes.nvidia.real import RealFabric
    from peerwatch.probes.report import ProbeError
    from peerwatch.probes.snapshot_read import take_snapshot

    if mode == "probe":
        fabric = RealFabric()
        errors: list[ProbeError] = []
        times = []
        for _ in range(RUNS + 1):  # the first pass starts CuPy: not counted
            start = time.perf_counter()
            inv = collect_inventory(fabric, errors)
            collect_counters(fabric, errors)
            times.append(time.perf_counter() - start)
        fabric.close()
        return {"times": times[1:], "first_s": times[0], "gpus": len(inv.gpus),
                "ports": len(inv.nvlinks)}
    fabric = RealFabric(quick=True)
    workers = fabric.gpu_count() if mode == "quick" else 1
    snaps = [take_snapshot(fabric, workers=workers) for _ in range(RUNS)]
    fabric.close()
    return {"times": [s.took_s for s in snaps], "gpus": len(snaps[-1].inventory.gpus),
            "ports": len(snaps[-1].inventory.nvlinks), "errors": len(snaps[-1].errors)}


def _run_child(argv: list[str]) -> tuple[subprocess.CompletedProcess[str] | None, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
                              env=env, cwd=ROOT, check=False)
    except subprocess.TimeoutExpired:
        return None, f"did not finish in {CHILD_TIMEOUT_S} s"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        return None, f"exit {done.returncode}: {tail[0][:200]}"
    return done, ""


def measure(mode: str) -> dict[str, Any]:
    done, why = _run_child([sys.executable, __file__, "--child", mode])
    return {"error": why} if done is None else json.loads(done.stdout.strip().splitlines()[-1])


def measure_cli() -> dict[str, Any]:
    walls, took = [], []
    argv = [sys.executable, "-m", "peerwatch.app.cli", "snapshot", "--json", "--fabric", "nvml"]
    for _ in range(RUNS):
        start = time.perf_counter()
        done, why = _run_child(argv)
        if done is None:
            return {"error": why}
        walls.append(time.perf_counter() - start)
        snap = json.loads(done.stdout)
        took.append(snap["took_s"])
    return {"times": took, "walls": walls, "gpus": len(snap["inventory"]["gpus"]),
            "ports": len(snap["inventory"]["nvlinks"]), "errors": len(snap["errors"])}


def gpu_here() -> str | None:
    """None when NVML sees a GPU here, else why not."""
    try:
        from peerwatch.probes.errors import FabricUnavailable
        from peerwatch.probes.nvidia.nvml import Nvml
    except ImportError as exc:
        return f"the probe cannot load here ({exc}); carry its wheels (WHL=.whl)"
    try:
        Nvml().close()
    except FabricUnavailable as exc:
        return f"no GPU here ({exc})"
    return None


def table(rows: dict[str, dict[str, Any]]) -> list[str]:
    ref = statistics.median(rows["probe"]["times"]) if "times" in rows.get("probe", {}) else None
    out = [f"{'way':<8} {'median':>9} {'min':>9} {'max':>9} {'GPUs':>5} {'ports':>6} "
           f"{'vs probe pass':>14}  note"]
    for name, row in rows.items():
        if "error" in row:
            out.append(f"{name:<8} failed: {row['error']}")
            continue
        t = row["times"]
        med = statistics.median(t)
        ratio = f"{med / ref:.2f}" if ref else "-"
        note = f"wall {statistics.median(row['walls']):.3f} s with start-up" if "walls" in row \
            else f"first {row['first_s']:.3f} s (CuPy start)" if "first_s" in row else ""
        out.append(f"{name:<8} {med:>8.3f}s {min(t):>8.3f}s {max(t):>8.3f}s "
                   f"{row['gpus']:>5} {row['ports']:>6} {ratio:>14}  {note}")
    return out


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2])))
        return 0
    why = gpu_here()
    if why:
        print(f"skipped: {why}")
        return 0
    rows = {"cli": measure_cli(), "quick": measure("quick"), "serial": measure("serial"),
            "probe": measure("probe")}
    for name, row in rows.items():
        print(f"{name}: {json.dumps(row)}")
    quick = rows["quick"].get("times")
    verdict = ("no reading" if not quick else
               f"{'within' if statistics.median(quick) < BUDGET_S else 'OVER'} the "
               f"{BUDGET_S:g} s budget")
    print(f"\njob snapshot on this host, median of {RUNS} (reading only; 'vs probe pass' = "
          f"time / the probe's inventory+counter pass): {verdict}")
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    import argparse

    from bench.helpers.cli import parser

    options = parser(__doc__, __file__)
    options.add_argument("--child", metavar="WAY", help=argparse.SUPPRESS)  # one reading
    options.parse_args()
    sys.exit(main())
