"""Hand-built reports for the server tests: an NVSwitch host of N GPUs (an HGX board).

`sweep(...)` returns a Report whose transfer results follow `value(src, dst, test)`; links
listed in `down_links` are reported down (and leave their GPU's NVSwitch width short);
`counters` lets a test say what each link's cumulative counters read.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

from peerwatch.app.analysis.expected import expected
from peerwatch.probes.report import (
    CounterSample,
    GpuActivity,
    GpuInfo,
    HostIdentity,
    Inventory,
    LinkCounters,
    LinkState,
    NvLinkPort,
    P2PCap,
    P2PStatus,
    PairInfo,
    PathLevel,
    PcieLink,
    RemoteType,
    Report,
    ReportKind,
    SwitchFabricInfo,
    TestName,
    TransferResult,
    unit_of,
)

LINKS = 18
SPEED = 26.562e9
# Two days ago on the hour: far enough back for any history a test builds after it.
T0 = (datetime.now(UTC) - timedelta(days=2)).replace(minute=0, second=0, microsecond=0)


def gpu(i: int) -> GpuInfo:
    return GpuInfo(index=i, uuid=f"GPU-{i:04d}", name="NVIDIA H200",
                   pci_bus_id=f"00000000:{0x19 + i:02X}:00.0", memory_total_bytes=141 << 30,
                   cpu_affinity="0-47" if i < 4 else "48-95", nvlink_count=LINKS,
                   pcie=PcieLink(gen_current=5, gen_max=5, width_current=16, width_max=16),
                   switch_fabric=SwitchFabricInfo(state="completed", status="success",
                                                  clique_id=1))


def inventory(n: int, down_links: Iterable[tuple[int, int]] = ()) -> Inventory:
    down = set(down_links)
    ports = [NvLinkPort(gpu=g, link=k, state=LinkState.DOWN if (g, k) in down else LinkState.UP,
                        version="4.0", speed_bps=SPEED, remote_type=RemoteType.NVSWITCH)
             for g in range(n) for k in range(LINKS)]
    active = {g: sum(1 for p in ports if p.gpu == g and p.state is LinkState.UP)
              for g in range(n)}
    ok = {c: P2PStatus.OK for c in (P2PCap.READ, P2PCap.WRITE, P2PCap.NVLINK)}
    pairs = []
    for s in range(n):
        for d in range(n):
            if s != d:
                width = min(active[s], active[d])
                pairs.append(PairInfo(src=s, dst=d, topology=f"NV{width}" if width else "PHB",
                                      pcie_path=PathLevel.PHB, nvlink_width=width,
                                      via_nvswitch=True, p2p=ok, can_access_peer=True))
    return Inventory(gpus=[gpu(i) for i in range(n)], nvlinks=ports, pairs=pairs)


@functools.cache
def expected_value(test: TestName, n: int = 2, src: int = 0, dst: int = 1) -> float:
    inv = inventory(n)
    pair = next(p for p in inv.pairs if p.src == src and p.dst == dst)
    e = expected(test, pair, inv.gpus[src], inv.gpus[dst], SPEED)
    assert e is not None
    return e.value


def healthy(src: int, dst: int, test: TestName) -> float | None:
    return expected_value(test) * 0.98 if test is not TestName.LATENCY else 0.84e-6


ValueFn = Callable[[int, int, TestName], float | None]


def sweep(host: str = "node-a", n: int = 2, at: datetime = T0,
          value: ValueFn = healthy, tests: Iterable[TestName] = (TestName.CE_WRITE,),
          contended: Iterable[tuple[int, int]] = (),
          errors: dict[tuple[int, int], str] | None = None,
          down_links: Iterable[tuple[int, int]] = (),
          counters: dict[tuple[int, int], int] | None = None,
          error_counts: dict[tuple[int, int], int] | None = None,
          kind: ReportKind = ReportKind.SWEEP, report_id: uuid.UUID | None = None) -> Report:
    """One report at `at`. `counters[(gpu, link)]`: the link's TX and RX byte counters;
    `error_counts[(gpu, link)]`: every one of its error counters (default 5, a healthy idle
    lifetime count)."""
    busy, failed = set(contended), errors or {}
    results = []
    for test in tests:
        for s in range(n):
            for d in range(n):
                if s == d:
                    continue
                v = None if (s, d) in failed else value(s, d, test)
                results.append(TransferResult(
                    test=test, src=s, dst=d, value=v, unit=unit_of(test),
                    samples=[v] if v is not None else [], error=failed.get((s, d)),
                    contended=(s, d) in busy, foreign_bytes=(8 << 30) if (s, d) in busy else 0,
                    gpu_time_s=0.002, device_memory_bytes=128 << 20, verified=v is not None,
                    started_at=at))
    samples = []
    if counters is not None:
        errs = error_counts or {}
        links = [LinkCounters(gpu=g, link=k, tx_bytes=c, rx_bytes=c, replay=errs.get((g, k), 5),
                              recovery=errs.get((g, k), 5), crc_flit=errs.get((g, k), 5),
                              crc_data=errs.get((g, k), 5), ecc_data=errs.get((g, k), 5))
                 for (g, k), c in sorted(counters.items())]
        samples.append(CounterSample(
            at=at, links=links, pcie_replay={g: 0 for g in range(n)},
            activity=[GpuActivity(gpu=g, utilization_pct=0.0, memory_used_bytes=0)
                      for g in range(n)]))
    return Report(report_id=report_id or uuid.uuid4(), kind=kind,
                  host=HostIdentity(hostname=host, fabric="simulated:test"), started_at=at,
                  finished_at=at + timedelta(seconds=5), inventory=inventory(n, down_links),
                  counters=samples, results=results)
