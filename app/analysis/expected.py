"""Expected bandwidth and latency of a GPU pair (or of one GPU's PCIe link), from topology alone.

What a healthy pair of this shape should reach: NVLink width x per-link rate x efficiency, or
PCIe generation x width x efficiency. The efficiencies are measured, not datasheet: on the lent
H200 pair (NVLink 4, 18 links x 26.562 GB/s = 478 GB/s per direction) nvbandwidth reached
396 GB/s CE (0.83), 779 GB/s CE both ways (2 x 0.815), 370 GB/s SM (0.775), and NCCL all-reduce
328 GB/s bus bandwidth at 1 GiB (0.69); P2P disabled staged through host reached 37.7 GB/s
over PCIe 5 x16 (0.60 of 63 GB/s), 52.3 GB/s both ways (0.83) and 18 us latency.
See ../shared/REFERENCE.md.

Every expectation carries its basis in words, so a verdict can say *why* a number is low.
"""

from __future__ import annotations

from dataclasses import dataclass

from peerwatch.probes.report import GpuInfo, PairInfo, PathLevel, TestName, Unit, unit_of
from peerwatch.probes.test_kinds import kind_of

# Which model applies to a test, and with what efficiency (the fraction of the raw
# per-direction link rate a healthy pair reaches), is each kind's `expect` row in
# `probes/test_kinds.py`. Host <-> GPU copies (h2d, d2h: pinned host memory on the GPU's NUMA
# node, copy engine) reach 55.5 GB/s H2D and 55.4 GB/s D2H over PCIe 5 x16 (63.0 GB/s) on
# one H200 (REFERENCE.md section 6; nvbandwidth's host_to_device_memcpy_ce: 55.5): 0.88.
STAGED_LATENCY_S = 18e-6  # a 16-byte copy staged through host, P2P off (measured 17.5-18.3 us)

# Usable bytes/s per PCIe lane and direction, after line encoding.
PCIE_LANE_BPS: dict[int, float] = {
    1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.563e9,
}

# Peer pointer-chase latency a healthy path shows (seconds). NVSwitch measured: 830 ns.
LATENCY_S: dict[str, float] = {
    "nvlink": 0.85e-6,
    PathLevel.PIX: 1.6e-6,
    PathLevel.PXB: 1.8e-6,
    PathLevel.PHB: 2.2e-6,
    PathLevel.NODE: 2.6e-6,
    PathLevel.SYS: 4.0e-6,
}

DEFAULT_NVLINK_SPEED_BPS = 26.562e9  # NVLink 4 per link and direction, when NVML gives none


@dataclass(frozen=True)
class Expectation:
    value: float
    unit: Unit
    basis: str  # e.g. "NV18 x 26.6 GB/s x 0.83"


def pcie_bps(gpu: GpuInfo) -> float | None:
    """Per-direction PCIe rate of one GPU's link as trained now (None when unknown)."""
    gen = gpu.pcie.gen_current or gpu.pcie.gen_max
    width = gpu.pcie.width_current or gpu.pcie.width_max
    if not gen or not width:
        return None
    return PCIE_LANE_BPS.get(gen, PCIE_LANE_BPS[6]) * width


def _gbps(v: float) -> str:
    return f"{v / 1e9:.1f} GB/s"


def _pcie_floor(src: GpuInfo, dst: GpuInfo) -> tuple[float, str] | None:
    rates = [(pcie_bps(g), g) for g in (src, dst)]
    known = [(r, g) for r, g in rates if r]
    if not known:
        return None
    rate, g = min(known, key=lambda t: t[0])
    gen = g.pcie.gen_current or g.pcie.gen_max
    width = g.pcie.width_current or g.pcie.width_max
    return rate, f"PCIe gen{gen} x{width} ({_gbps(rate)})"


def expected(
    test: TestName,
    pair: PairInfo,
    src: GpuInfo,
    dst: GpuInfo,
    link_speed_bps: float | None = None,
) -> Expectation | None:
    """What `test` on `pair` should measure on healthy hardware, or None if unknowable.

    link_speed_bps: per-link, per-direction NVLink rate of the pair's links (from NVML).
    """
    rule = kind_of(test).expect
    unit = unit_of(test)
    p2p_usable = pair.can_access_peer is not False
    if rule.model == "latency":
        if not p2p_usable:
            return Expectation(STAGED_LATENCY_S, unit, "P2P unavailable: staged copy latency")
        if pair.nvlink_width:
            return Expectation(LATENCY_S["nvlink"], unit, f"{pair.topology} peer latency")
        return Expectation(LATENCY_S[pair.pcie_path], unit, f"PCIe {pair.pcie_path} peer latency")
    if rule.model == "staged" or not p2p_usable:
        floor = _pcie_floor(src, dst)
        if floor is None:
            return None
        rate, what = floor
        eff = rule.staged
        why = "staged through host" if rule.model == "staged" else "P2P unavailable, staged"
        return Expectation(rate * eff, unit, f"{why}: {what} x {eff:.2f}")
    if pair.nvlink_width:
        speed = link_speed_bps or DEFAULT_NVLINK_SPEED_BPS
        eff = _efficiency(test, rule.nvlink)
        raw = pair.nvlink_width * speed
        return Expectation(raw * eff, unit, f"{pair.topology} x {_gbps(speed)} x {eff:.2f}")
    floor = _pcie_floor(src, dst)
    if floor is None:
        return None
    rate, what = floor
    eff = _efficiency(test, rule.pcie)
    return Expectation(rate * eff, unit, f"{pair.topology}: {what} x {eff:.2f}")


def _efficiency(test: TestName, eff: float | None) -> float:
    """A copy model's efficiency; a kind that declares none has no P2P expectation."""
    if eff is None:
        raise KeyError(test)
    return eff


def at_slot_maximum(gpu: GpuInfo) -> GpuInfo:
    """The GPU as if its PCIe link ran at the maximum generation and width of its slot: what
    a path over it should carry, so a link trained below shows its cost (as lost NVLinks do)."""
    p = gpu.pcie
    best = p.model_copy(update={"gen_current": p.gen_max or p.gen_current,
                                "width_current": p.width_max or p.width_current})
    return gpu if best == p else gpu.model_copy(update={"pcie": best})


def trained_below(gpu: GpuInfo) -> str | None:
    """"gen4 x4" when the GPU's PCIe link trained below its slot's maximum, else None."""
    p = gpu.pcie
    now = (p.gen_current, p.width_current)
    best = (p.gen_max or p.gen_current, p.width_max or p.width_current)
    return None if now == best or None in now else f"gen{now[0]} x{now[1]}"


def expected_gpu(test: TestName, gpu: GpuInfo) -> Expectation | None:
    """What a per-GPU test should measure on this GPU: h2d/d2h from the PCIe link the slot
    offers (maximum generation x width x measured efficiency), so a link trained below it
    shows its cost instead of lowering the bar, and the basis says how it trained. None for
    `local` (memory bandwidth is not in the inventory: it is judged against its own
    baseline) and where the link is unknown."""
    if kind_of(test).expect.model == "nic":
        return expected_nic(test, gpu)
    eff = kind_of(test).expect.host
    p = gpu.pcie
    gen, width = p.gen_max or p.gen_current, p.width_max or p.width_current
    if eff is None or not gen or not width:
        return None
    rate = PCIE_LANE_BPS.get(gen, PCIE_LANE_BPS[6]) * width
    basis = f"PCIe gen{gen} x{width} ({_gbps(rate)}) x {eff:.2f}"
    now = (p.gen_current or gen, p.width_current or width)
    if now != (gen, width):
        basis += f"; trained gen{now[0]} x{now[1]} now"
    return Expectation(rate * eff, unit_of(test), basis)


def expected_nic(test: TestName, gpu: GpuInfo) -> Expectation | None:
    """GPUDirect RDMA through the GPU's nearest NIC: the NIC's line rate (bits / 8), or the
    GPU's PCIe link where that is slower, x the kind's efficiency. None where the inventory
    names no NIC rate (no NIC, or a probe of schema 4)."""
    eff, line = kind_of(test).expect.nic, gpu.rdma.nic_rate_bps
    if eff is None or not line:
        return None
    rate, basis = line, f"{gpu.rdma.nearest_nic} line rate {_gbps(line)}"
    pcie = pcie_bps(at_slot_maximum(gpu))
    if pcie is not None and pcie < line:
        rate, basis = pcie, f"PCIe {_gbps(pcie)} (below {gpu.rdma.nearest_nic}'s {_gbps(line)})"
    return Expectation(rate * eff, unit_of(test), f"{basis} x {eff:.2f}")


def ratio(test: TestName, measured: float, expect: float) -> float:
    """Measured over expected, oriented so that 1.0 is as expected and lower is worse."""
    return oriented(measured, expect, unit_of(test) is Unit.SECONDS)


def oriented(measured: float, expect: float, inverse: bool) -> float:
    """`ratio` with the test's orientation looked up by the caller (`inverse`: a time, lower
    is better), for a loop over one test's samples."""
    if measured <= 0 or expect <= 0:
        return 0.0
    return expect / measured if inverse else measured / expect
