"""Contention: a second PROCESS copies GPU0 -> GPU1 without pause while the probe measures.

The probe cannot see the other process, only NVLink TX counters around its own window. This
benchmark shows that it still labels its sample contended and counts the other process's bytes,
and that the same probe on the idle pair is not labelled. Without a GPU it says so and returns 0.

    python -m bench.probe_contention                     # idle run, then the contended run
    python -m bench.probe_contention --load 0 1 20       # (the load process itself)
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace

from bench.helpers.gpu import real_fabric_or_skip
from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.report import TestName

MiB = 1 << 20
LOAD = TestSpec(TestName.CE_WRITE, bytes_per_copy=256 * MiB, copies=32, samples=1, warmup=0)


def load(src: int, dst: int, seconds: float) -> int:
    """Copy src -> dst back to back until `seconds` pass; print 'ready' once copying."""
    from peerwatch.probes.nvidia.real import RealFabric

    fabric = RealFabric()
    deadline = time.monotonic() + seconds
    spec = replace(LOAD, src=src, dst=dst)
    moved = 0
    try:
        while time.monotonic() < deadline:
            m = fabric.measure(spec)
            moved += spec.bytes_per_copy * spec.copies
            if moved == spec.bytes_per_copy * spec.copies:
                print(f"ready {m.value / 1e9:.1f} GB/s", flush=True)
    finally:
        fabric.close()
    print(f"load done: {moved / 1e9:.1f} GB moved", flush=True)
    return 0


def start_load(src: int, dst: int, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.probe_contention", "--load", str(src), str(dst),
         str(seconds)],
        stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until the load copies (or dies)
    if not line.startswith("ready"):
        proc.kill()
        raise RuntimeError(f"the load process did not start: {line!r}")
    print(f"load process {proc.pid}: {line.strip()}")
    return proc


def probe(fabric, label: str) -> bool:
    """The sweep over GPUs 0 and 1 (ce_write, sm_read, both directions), forced: the load
    process makes both GPUs busy, which the sweep would otherwise skip. True when a result
    was labelled contended."""
    try:
        from peerwatch.probes.sweep import SweepOptions, run_sweep
    except ImportError:
        return _manual(fabric, label)
    options = SweepOptions(tests=(TestName.CE_WRITE, TestName.SM_READ), gpus=(0, 1), force=True)
    results = run_sweep(fabric, options).results
    for r in results:
        value = "-" if r.value is None else f"{r.value / 1e9:7.1f} GB/s"
        print(f"{label:10} {r.test.value:9} {r.src}->{r.dst} {value}  "
              f"contended={r.contended!s:5} foreign={r.foreign_bytes / MiB:9.1f} MiB "
              f"{r.error or ''}")
    return any(r.contended for r in results)


def _manual(fabric, label: str) -> bool:
    """Before probes/sweep.py exists: the same judgement by hand (TX of GPU 0 around ce_write
    0->1, minus the test's own bytes, contended above 5% of them)."""
    spec = TestSpec(TestName.CE_WRITE, src=0, dst=1, bytes_per_copy=64 * MiB, copies=8)
    before = sum(c.tx_bytes or 0 for c in fabric.link_counters(0))
    m = fabric.measure(spec)
    after = sum(c.tx_bytes or 0 for c in fabric.link_counters(0))
    foreign = max(0, after - before - m.wire_bytes[0])
    contended = foreign > max(1 << 20, 0.05 * m.wire_bytes[0])
    print(f"{label:10} ce_write 0->1 {m.value / 1e9:7.1f} GB/s contended={contended} "
          f"foreign={foreign / MiB:9.1f} MiB (manual: no peerwatch.probes.sweep here)")
    return contended


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--load"]:
        return load(int(args[1]), int(args[2]), float(args[3]))
    fabric = real_fabric_or_skip()
    if fabric is None:
        return 0
    try:
        if fabric.gpu_count() < 2:
            print("skipped: contention needs two GPUs")
            return 0
        idle_flagged = probe(fabric, "idle")
        proc = start_load(0, 1, 30)
        try:
            busy_flagged = probe(fabric, "contended")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    finally:
        fabric.close()
    ok = busy_flagged and not idle_flagged
    print(f"contention labelled: idle={idle_flagged} contended={busy_flagged} -> "
          f"{'OK' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    from bench.helpers.cli import parser

    options = parser(__doc__, __file__)
    options.add_argument("--load", nargs=3, metavar=("SRC", "DST", "SECONDS"),
                         help="be the load process: copy GPU SRC -> DST for SECONDS")
    options.parse_args()
    raise SystemExit(main())
