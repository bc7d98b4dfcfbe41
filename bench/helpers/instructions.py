"""Instructions counted beside CPU time: the same calls run again under valgrind's callgrind.

CPU time moves with the machine's load (other sessions share its 2 cores); an instruction
count barely does. This machine's kernel offers no hardware counters (`perf stat -e
instructions` answers "<not supported>"), so the count is callgrind's: the bench runs itself
again under `valgrind --tool=callgrind --instr-atstart=no` (`child_argv`), instrumentation
switched on around each counted call only (`Counter.count`), each call's instructions read
from the dump `callgrind_control -d` writes after it (dumps are incremental). The cost of
switching instrumentation on and off (a subprocess's return path) is counted around an
empty call and taken off each figure.

What it counts is this process: the Python server side (and SQLite, which runs in it); a
PostgreSQL backend is another process, not counted here (its CPU time is, by /proc).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import orjson

MARK = "INSTRUCTIONS "  # the child's line of figures on stdout


def available() -> str | None:
    """None when callgrind can count here, else why not."""
    missing = [tool for tool in ("valgrind", "callgrind_control") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not found" if missing else None


class Counter:
    """Instructions of calls made in this process, which runs under callgrind."""

    def __init__(self, out_file: str) -> None:
        self.out_file = out_file
        self.dumps = 0
        self.overhead = 0
        self.overhead = min(self.count(lambda: None) for _ in range(3))

    def _control(self, *args: str) -> None:
        subprocess.run(["callgrind_control", *args, str(os.getpid())], check=True,
                       capture_output=True)

    def count(self, call: Callable[[], object]) -> int:
        """Instructions `call` executed (less the switching's own)."""
        self._control("-i", "on")
        try:
            call()
        finally:
            self._control("-i", "off")
        self._control("-d", "counted")
        self.dumps += 1
        return max(0, self._totals(Path(f"{self.out_file}.{self.dumps}")) - self.overhead)

    @staticmethod
    def _totals(dump: Path) -> int:
        for line in dump.read_text().splitlines():
            if line.startswith("totals:"):
                return int(line.split()[1])
        raise RuntimeError(f"no totals line in callgrind's dump {dump}")


def report(figures: dict[str, list[int]]) -> None:
    """The child's figures, as one line its parent reads (`counted`)."""
    print(MARK + orjson.dumps(figures).decode(), flush=True)


def counted(argv: list[str], timeout_s: float) -> dict[str, list[int]]:
    """Run `python argv...` under callgrind (instrumentation off at start); the figures it
    reported (`report`), each a list of per-call instruction counts."""
    with tempfile.TemporaryDirectory(prefix="peerwatch-callgrind-") as tmp:
        out_file = str(Path(tmp) / "callgrind.out")
        env = {**os.environ, "PEERWATCH_CALLGRIND_OUT": out_file}
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no",
             f"--callgrind-out-file={out_file}", sys.executable, *argv],
            capture_output=True, text=True, env=env, timeout=timeout_s)
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            return dict(orjson.loads(line[len(MARK):]))
    raise RuntimeError(f"the callgrind run exited {done.returncode} without figures:\n"
                       f"{(done.stdout + done.stderr)[-3000:]}")


def out_file() -> str:
    """Where the child's callgrind writes (set by `counted`)."""
    found = os.environ.get("PEERWATCH_CALLGRIND_OUT")
    if not found:
        raise RuntimeError("--count-instructions runs only as `counted` starts it")
    return found


def ratio_line(what: str, ours: float, floor: float, unit: str, target: float | None) -> str:
    ratio = ours / max(floor, 1e-9)
    met = "" if target is None else (
        f"; target <= {target}x: {'met' if ratio <= target else 'MISSED'}")
    return (f"  {what:<56} project {ours:9.2f} {unit}, floor {floor:9.2f} {unit} = "
            f"{ratio:.2f}x the floor{met}")


def medians(figures: dict[str, list[int]]) -> dict[str, float]:
    return {k: statistics.median(v) for k, v in figures.items() if v}
