"""GPUDirect RDMA measured: a GPU's memory written through its nearest NIC and back into it.

The loopback runs perftest's `ib_write_bw` twice on this host against the one NIC, a server
and a client joined over localhost, both with `--use_cuda=<CUDA device>`: the NIC reads the
GPU's buffer over PCIe (GPUDirect), puts it on its port and writes it into the other
process's GPU buffer, so the figure is the GPU <-> NIC path and the NIC's own port, the path
Azure's health checks and NCCL's network transport use. Where perftest was built without
CUDA, or is not installed, the test says so ("not supported: ..."), never a figure.

NCCL's network transport between two local ranks (NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1,
NCCL_NET_GDR_LEVEL=SYS, NCCL_IB_HCA=<nic>) is the other way to move GPU memory through the
NIC; it is not written here (docs/network.md says so). Nothing in this module has run on a
host with an RDMA NIC: the command, its parsing and its failures are tested against a fake
`ib_write_bw` that prints what perftest prints.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import dataclass

from peerwatch.probes.errors import NotSupported, TransferError
from peerwatch.probes.fabric import Measurement

TOOL = "ib_write_bw"
PORT = 18515  # perftest's default port is 18515; one loopback at a time per host
# "#bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]" then a row
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s*$", re.M)


@dataclass(frozen=True)
class Loopback:
    """One loopback's parameters: the NIC, the CUDA device, the message size and count."""

    nic: str
    cuda_device: int
    size: int
    iterations: int
    tool: str = TOOL
    port: int = PORT
    timeout_s: float = 30.0

    def command(self, server: bool) -> list[str]:
        args = [self.tool, "-d", self.nic, f"--use_cuda={self.cuda_device}",
                "-s", str(self.size), "-n", str(self.iterations), "--report_gbits", "-F",
                "-p", str(self.port)]
        return args if server else [*args, "localhost"]


def parse_gbits(output: str) -> float:
    """The average bandwidth perftest printed, in Gb/s; TransferError naming what it said."""
    rows = _ROW.findall(output)
    if not rows:
        tail = output.strip().splitlines()[-3:]
        raise TransferError(f"{TOOL} printed no result row: {' | '.join(tail)[:300]}")
    return float(rows[-1][3])


def unsupported(output: str) -> str | None:
    """Why perftest cannot use GPU memory here, from its own words; None if it could."""
    for words in ("unrecognized option '--use_cuda", "CUDA support is not enabled",
                  "Couldn't allocate MR", "No IB devices found", "not found"):
        if words in output:
            return output.strip().splitlines()[-1][:300] if output.strip() else words
    return None


_NOT_LISTENING = ("Couldn't connect", "Unable to open file descriptor for socket connection")


def _dial(loop: Loopback, server: subprocess.Popen[str],
          deadline: float) -> subprocess.CompletedProcess[str]:
    """The client, dialled again while the server is alive but not yet listening: perftest
    prints no ready line, so its refusal is the only sign (no guess at how long it takes)."""
    while True:
        left = max(0.1, deadline - time.perf_counter())
        client = subprocess.run(loop.command(server=False), capture_output=True, text=True,
                                timeout=left)
        refused = any(w in client.stdout + client.stderr for w in _NOT_LISTENING)
        if not refused or server.poll() is not None or time.perf_counter() >= deadline:
            return client
        time.sleep(0.05)


def run_loopback(loop: Loopback) -> Measurement:
    """Server, then client, of one loopback; the client's average is the figure."""
    if shutil.which(loop.tool) is None:
        raise NotSupported(f"{loop.tool} (perftest) is not installed: GPUDirect RDMA not "
                           "measured")
    server = subprocess.Popen(loop.command(server=True), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    started = time.perf_counter()
    try:
        client = _dial(loop, server, started + loop.timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise TransferError(f"{loop.tool} loopback on {loop.nic} outlived "
                            f"{loop.timeout_s:g} s") from exc
    finally:
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    output = client.stdout + client.stderr
    if (why := unsupported(output)) is not None:
        raise NotSupported(f"{loop.tool} on {loop.nic}: {why}")
    if client.returncode != 0:
        raise TransferError(f"{loop.tool} on {loop.nic} exited {client.returncode}: "
                            f"{output.strip()[-300:]}")
    value = parse_gbits(output) * 1e9 / 8
    if value <= 0:
        raise TransferError(f"{loop.tool} on {loop.nic} measured nothing")
    elapsed = time.perf_counter() - started
    return Measurement(samples=[value], gpu_time_s=elapsed, device_memory_bytes=2 * loop.size,
                       verified=False)
