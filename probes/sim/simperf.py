"""How fast the simulated machine runs: the measured H200 behaviour, scaled to each path.

Every figure comes from `presets/calibration.json`. An NVLink path delivers what the H200 pair
delivered per unit of raw link rate (CE 396.4 GB/s of 478.1 raw, SM 369.8, ...), times the CE
size curve measured with CuPy (224 GB/s at 1 MiB, 388 at 64 MiB, 396 at 1 GiB); a PCIe P2P
path gets the PCIe efficiencies, a host-staged path what p2pBandwidthLatencyTest saw with P2P
off (37.7 GB/s over PCIe 5 x16), host copies what one H200 measured per unit of its PCIe
rate (55.5 of 63.0 GB/s). So `h200x2` reproduces the fixture's numbers and the other
presets behave as a machine with those links would, within the same model.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Sequence

from peerwatch.probes.report import TestName
from peerwatch.probes.sim.presets import Calibration
from peerwatch.probes.sim.simtopo import Route
from peerwatch.probes.test_kinds import kind_of

BIG_COPY = 64 << 20  # at and above this size an SM copy kernel runs at its full rate


def _log_interp(points: dict[int, float], nbytes: int) -> float:
    """Interpolate a size curve linearly in log2(size); clamp beyond its ends."""
    xs = sorted(points)
    if nbytes <= xs[0]:
        return points[xs[0]] * nbytes / xs[0]
    if nbytes >= xs[-1]:
        return points[xs[-1]]
    i = bisect.bisect_left(xs, nbytes)
    lo, hi = xs[i - 1], xs[i]
    t = (math.log2(nbytes) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
    return points[lo] + t * (points[hi] - points[lo])


class PerfModel:
    def __init__(self, cal: Calibration) -> None:
        self.cal = cal
        self.ce_peak = max(cal.ce_GBps_by_bytes.values())
        self.nvlink_eff = {
            TestName(k): v / cal.reference_nvlink_raw_GBps for k, v in cal.nvlink_GBps.items()
        }
        self.pcie_eff = {TestName(k): v for k, v in cal.pcie_p2p_efficiency.items()}
        self.staged_uni = cal.staged_GBps["uni"] / cal.reference_pcie_raw_GBps
        self.staged_bidir = cal.staged_GBps["bidir"] / cal.reference_pcie_raw_GBps
        self.host_eff = {k: v / cal.reference_pcie_raw_GBps  # by calibration entry's name
                         for k, v in cal.host_copy_GBps.items()}
        self.local_bps = cal.local_copy_GBps * 1e9

    def copy_overhead_s(self, nbytes: int) -> float:
        """Fixed cost of one copy of `nbytes`, read off the measured CE size curve.

        The curve fits time = nbytes / peak + overhead with an overhead of 2-3.5 us at every
        size, so a path with another peak rate (PCIe, fewer links) keeps the same overhead.
        """
        if nbytes >= max(self.cal.ce_GBps_by_bytes):
            return 0.0
        at_size = _log_interp(self.cal.ce_GBps_by_bytes, nbytes) * 1e9
        return max(0.0, nbytes / at_size - nbytes / (self.ce_peak * 1e9))

    def sized(self, peak_bps: float, nbytes: int) -> float:
        """Bytes/s a copy of `nbytes` reaches on a path whose large copies reach `peak_bps`."""
        return nbytes / (nbytes / peak_bps + self.copy_overhead_s(nbytes))

    def bandwidth(self, test: TestName, route: Route, nbytes: int) -> float:
        """Healthy bytes/s of a pair test over `route` (total of both ways for ce_bidir).

        SM copy kernels run at full rate from 64 MiB (launch gaps are kept out of the timing),
        so only CE and staged copies pay the per-copy overhead.
        """
        kind = kind_of(test)
        ways = kind.sim.ways
        if kind.sim.model == "staged" or route.kind == "staged":
            eff = self.staged_bidir if ways == 2 else self.staged_uni
            peak = route.pcie_bps * eff
        else:
            eff = (self.nvlink_eff if route.kind == "nvlink" else self.pcie_eff)[
                TestName(kind.calibration)]
            peak = route.raw_bps * eff
            if kind.sim.model == "sm_copy":
                return peak * min(1.0, self.sized(peak, nbytes) / self.sized(peak, BIG_COPY))
        return ways * self.sized(peak / ways, nbytes)

    def gpu_copy(self, test: TestName, pcie_bps: float, nbytes: int) -> float:
        """Healthy bytes/s of a per-GPU test: h2d/d2h at the measured share of the GPU's
        trained PCIe rate (so a downtrained link slows them), local at HBM copy speed."""
        kind = kind_of(test)
        peak = (self.local_bps if kind.sim.model == "local_copy"
                else pcie_bps * self.host_eff[kind.calibration])
        return self.sized(peak, nbytes)

    def latency(self, route: Route) -> float:
        """Healthy seconds per dependent load of a pointer chase over `route`."""
        lat = self.cal.latency_ns
        key = "nvlink" if route.kind == "nvlink" else (
            "staged" if route.kind == "staged" else route.pcie_path.value)
        return lat[key] * 1e-9

    def allreduce_busbw(self, bottleneck_ce_bps: float, nbytes: int) -> float:
        """NCCL ring bus bandwidth when the ring's slowest hop copies at `bottleneck_ce_bps`.

        Measured on the H200 pair as busbw/CE: 270/396 at 64 MiB, 328/396 at 1 GiB.
        """
        measured = _log_interp(self.cal.allreduce_busbw_GBps_by_bytes, nbytes)
        return bottleneck_ce_bps * measured / self.cal.nvlink_GBps["ce_write"]


def best_ring(gpus: Sequence[int], hop_bps: Callable[[int, int], float]) -> tuple[list[int], float]:
    """The ring order whose slowest hop is fastest (what NCCL's search finds), and that hop.

    Exhaustive for up to 8 GPUs (5040 orders); index order beyond.
    """
    first, rest = gpus[0], list(gpus[1:])
    orders = itertools.permutations(rest) if len(gpus) <= 8 else iter([tuple(rest)])
    best: tuple[list[int], float] = ([first, *rest], -1.0)
    for order in orders:
        ring = [first, *order]
        slowest = min(hop_bps(a, b) for a, b in zip(ring, ring[1:] + ring[:1], strict=True))
        if slowest > best[1]:
            best = (ring, slowest)
    return best
