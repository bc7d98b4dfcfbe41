"""GPUDirect RDMA measured on this host: each GPU's memory through its nearest RDMA NIC and
back (the probe's own `gdr_loopback` test: perftest's `ib_write_bw --use_cuda` over the NIC's
port, probes/nvidia/gdr.py), against the NIC's line rate x 0.85 (probes/test_kinds.py).

Run it on a GPU host with RDMA NICs (bench/gpu/checks.sh does, as step `gdr`):

    python3 bench/gpu/gdr.py

It prints, per GPU, its nearest NIC and PCIe path level, the NIC's port rate, the measured
figure, the expected one and their ratio, then a table of ratios. It skips with the reason
where there is no GPU, no RDMA NIC, or no perftest built with CUDA, and exits 0. Exit
status 1 when any GPU with a near NIC (PIX/PXB) measures below 0.7 of its expectation (the
server's default degraded ratio). Nothing here has run on hardware yet (docs/network.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from peerwatch.app.analysis.expected import expected_gpu  # noqa: E402
from peerwatch.probes.errors import NotSupported, PeerwatchProbeError  # noqa: E402
from peerwatch.probes.nvidia.nics import NicReader  # noqa: E402
from peerwatch.probes.nvidia.sysfs import Sysfs  # noqa: E402
from peerwatch.probes.report import TestName  # noqa: E402

MIN_RATIO = 0.7
NEAR = ("X", "PIX", "PXB")


def main() -> int:
    if not NicReader(Sysfs()).names():
        print("skipped: no RDMA NIC on this host (/sys/class/infiniband is empty or absent): "
              "GPUDirect RDMA cannot be measured here")
        return 0
    from bench.helpers.gpu import real_fabric_or_skip
    from peerwatch.probes.budgets import DEFAULT_BUDGETS

    fabric = real_fabric_or_skip()
    if fabric is None:
        return 0
    test = TestName.GDR_LOOPBACK
    rows, ok = [], True
    for gpu in range(fabric.gpu_count()):
        info = fabric.gpu(gpu)
        nic, path = info.rdma.nearest_nic, info.rdma.nic_path
        expect = expected_gpu(test, info)
        try:
            measured = fabric.measure(DEFAULT_BUDGETS[test].spec(test, gpu)).value
        except NotSupported as exc:
            print(f"skipped: GPU{gpu}: {exc}")
            continue
        except PeerwatchProbeError as exc:
            print(f"GPU{gpu} {nic} failed: {exc}")
            ok = False
            continue
        ratio = measured / expect.value if expect else None
        print(f"GPU{gpu} {nic} {path.value if path else '?'}: {measured / 1e9:.1f} GB/s, "
              f"expected {expect.value / 1e9 if expect else 0:.1f} GB/s "
              f"({expect.basis if expect else 'no NIC rate'})")
        rows.append((gpu, nic, path.value if path else "?", ratio))
        if ratio is not None and path is not None and path.value in NEAR and ratio < MIN_RATIO:
            ok = False
    print("GPU  NIC      path  measured/expected")
    for gpu, nic, level, ratio in rows:
        print(f"{gpu:<4} {nic or '-':<8} {level:<5} {'-' if ratio is None else f'{ratio:.2f}'}")
    fabric.close()
    return 0 if ok else 1


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    sys.exit(main())
