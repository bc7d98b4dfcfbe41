"""What a Slurm prolog pays for `peerwatch snapshot`: the whole command, in a fresh process.

Runs `python -m peerwatch.app.cli snapshot --fabric simulated:hgx8 --json` five times and prints the
median wall time and the snapshot's own reading time (`took_s`), against the reference: the
same command when the CLI first builds every command's parser, as it did before it imported
only the command being run (FastAPI, SQLAlchemy and the server's modules loaded for nothing).
The reading of a real host is timed by bench/gpu/snapshot.py on a GPU host.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.helpers.size import sized

ROOT = Path(__file__).resolve().parents[1]
RUNS = sized(5, 1)
ARGS = ["snapshot", "--fabric", "simulated:hgx8", "--json"]
EVERY_COMMAND = ("import sys; from peerwatch.app.cli import build_parser, main; build_parser(); "
                 f"sys.exit(main({ARGS!r}))")


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds of the whole process, the snapshot's took_s)."""
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=True)
    return time.perf_counter() - start, json.loads(done.stdout)["took_s"]


def main() -> int:
    ways = {"only the snapshot command": [sys.executable, "-m", "peerwatch.app.cli", *ARGS],
            "every command (reference)": [sys.executable, "-c", EVERY_COMMAND]}
    walls: dict[str, list[float]] = {name: [] for name in ways}
    reads: list[float] = []
    for _ in range(RUNS):  # alternated, so load on a shared machine hits both alike
        for name, argv in ways.items():
            wall, took = timed(argv)
            walls[name].append(wall)
            reads.append(took)
    ref = statistics.median(walls["every command (reference)"])
    print(f"`peerwatch snapshot` on a simulated 8-GPU host, median of {RUNS} fresh processes; "
          f"the reading itself: {statistics.median(reads) * 1000:.1f} ms")
    for name, times in walls.items():
        med = statistics.median(times)
        print(f"  {name:<28} {med:6.2f} s  ratio {med / ref:.2f}")
    return 0


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    sys.exit(main())
