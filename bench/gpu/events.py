"""Device check of the Xid/SXid events: NVML critical-Xid events registered on every GPU, one
wait that times out cleanly (no Xid expected on a healthy machine), and /dev/kmsg read to the
end without error, with how many NVRM and Xid/SXid lines it holds. Prints one JSON object;
exit 1 when a check fails.

Usage on a GPU host:  python3 bench/gpu/events.py
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from peerwatch.probes.errors import FabricUnavailable  # noqa: E402
from peerwatch.probes.nvidia.kernel_log import KernelLog  # noqa: E402
from peerwatch.probes.nvidia.nvml import Nvml  # noqa: E402
from peerwatch.probes.nvidia.nvml_events import NvmlEvents  # noqa: E402


def nvml_check() -> dict:
    nvml = Nvml()
    try:
        events = NvmlEvents(nvml, lambda xid: None, wait_ms=1000)
        started = time.monotonic()
        got = events.wait_once()
        waited = time.monotonic() - started
        out = {"gpus": nvml.gpu_count(), "registered": events.registered,
               "problems": events.problems, "event": None if got is None else got.__dict__,
               "timed_out": got is None and events.timeouts == 1, "wait_s": round(waited, 3)}
        events.close()
        return out
    finally:
        nvml.close()


def kmsg_check(path: Path = Path("/dev/kmsg")) -> dict:
    lines: list = []
    reader = KernelLog(lambda line, at, src: lines.append((line.kind.value, line.code)), path,
                       lookback=timedelta(days=3650))
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        reader.stop.clear()
        # read the whole buffer: stop as soon as a read would block (the backlog is done)
        import threading
        t = threading.Thread(target=reader.read_kmsg, args=(fd,))
        t.start()
        deadline = time.monotonic() + 10
        last = -1
        while time.monotonic() < deadline:
            time.sleep(0.5)
            if reader.counts["records"] == last:
                break
            last = reader.counts["records"]
        reader.stop.set()
        t.join(5)
    finally:
        os.close(fd)
    return {"records": reader.counts["records"], "nvrm_lines": reader.counts["nvrm"],
            "xid_sxid_lines": len(lines), "events": lines[:20], "problem": reader.problem}


def main() -> int:
    try:
        nvml_result = nvml_check()
    except FabricUnavailable as exc:  # no driver here: say so, as every GPU bench does
        print(f"skipped: no GPU here ({type(exc).__name__}: {exc})")
        return 0
    result = {"nvml": nvml_result, "kmsg": kmsg_check()}
    print(json.dumps(result, indent=1))
    nv, km = result["nvml"], result["kmsg"]
    ok = (len(nv["registered"]) == nv["gpus"] and (nv["timed_out"] or nv["event"] is not None)
          and km["problem"] is None and km["records"] > 0)
    print("gpu_events:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    sys.exit(main())
