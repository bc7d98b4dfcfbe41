"""What `peerwatch bench` prints for a person: nvbandwidth-style matrices, then topology,
P2P status, ratios to expected and the sweep's cost.

Every matrix reads the same way: the row is the source GPU, the column the destination
(`GPU(row) -> GPU(column)`), so data flows from the row's GPU to the column's.
"""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from peerwatch.app.cli.bench_expect import Expectations, Judged
from peerwatch.app.cli.bench_gpus import render_gpu_tests
from peerwatch.probes.report import (
    GPU_TESTS,
    JOINT_TESTS,
    TEST_ABOUT,
    GpuInfo,
    LinkState,
    P2PCap,
    P2PStatus,
    Report,
    TestName,
    TransferResult,
    test_scope,
)

P2P_ABBREV = {
    P2PStatus.OK: "OK", P2PStatus.CHIPSET_NOT_SUPPORTED: "CNS",
    P2PStatus.GPU_NOT_SUPPORTED: "GNS", P2PStatus.TOPOLOGY_NOT_SUPPORTED: "TNS",
    P2PStatus.DISABLED_BY_REGKEY: "DR", P2PStatus.NOT_SUPPORTED: "NS", P2PStatus.UNKNOWN: "U",
}


def _latency_scale(results: list[TransferResult]) -> tuple[float, str]:
    worst = max((r.value for r in results if r.value is not None), default=0.0)
    return (1e6, "µs") if worst >= 10e-6 else (1e9, "ns")


def _cell(r: TransferResult | None, scale: float) -> Text:
    if r is None:
        return Text("")
    if r.error is not None or r.value is None:
        return Text("ERR", style="bold red")
    digits = 0 if scale == 1e9 else (2 if scale == 1e6 else 1)
    text = Text(f"{r.value * scale:.{digits}f}")
    if r.contended:
        text.append("*", style="bold yellow")
    return text


def _titled(title: str, table: Table) -> Group:
    """Title above the table on its own lines, so a narrow matrix never wraps it."""
    return Group(Text.from_markup(title), table)


def _matrix(title: str, gpus: list[int], cell: dict[tuple[int, int], Text]) -> Group:
    table = Table(box=None, pad_edge=False)
    table.add_column("", justify="right", style="bold")
    for g in gpus:
        table.add_column(str(g), justify="right")
    for s in gpus:
        row = [Text("-", style="dim") if s == d else cell.get((s, d), Text("")) for d in gpus]
        table.add_row(str(s), *row)
    return _titled(title, table)


def render_results(console: Console, report: Report, tests: list[TestName]) -> None:
    gpus = sorted(g.index for g in report.inventory.gpus)
    for test in [t for t in tests if t not in (*GPU_TESTS, *JOINT_TESTS)]:
        results = [r for r in report.results if r.test is test]
        if test_scope(test) == "set":
            for r in results:
                value = "ERR" if r.value is None else f"{r.value / 1e9:.1f} GB/s"
                console.print(f"[bold]{test.value}[/] ({TEST_ABOUT[test]}) over GPUs "
                              f"{','.join(map(str, r.gpus))}: {value}")
            console.print()
            continue
        scale, unit = _latency_scale(results) if test is TestName.LATENCY else (1e-9, "GB/s")
        cells = {(r.src, r.dst): _cell(r, scale) for r in results}
        title = f"[bold]{test}[/] — {TEST_ABOUT[test]}\nGPU(row) -> GPU(column) {unit}"
        console.print(_matrix(title, gpus, cells))  # type: ignore[arg-type]
        console.print()


def render_topology(console: Console, report: Report) -> None:
    inv = report.inventory
    gpus = sorted(g.index for g in inv.gpus)
    pairs = {(p.src, p.dst): p for p in inv.pairs}
    table = Table(box=None, pad_edge=False)
    table.add_column("", style="bold")
    for g in gpus:
        table.add_column(f"GPU{g}", justify="center")
    table.add_column("CPU Affinity")
    table.add_column("NUMA Affinity")
    for info in sorted(inv.gpus, key=lambda g: g.index):
        row = ["X" if info.index == d else (pairs[(info.index, d)].topology
                                            if (info.index, d) in pairs else "?") for d in gpus]
        numa = "N/A" if info.numa_node is None else str(info.numa_node)
        table.add_row(f"GPU{info.index}", *row, info.cpu_affinity or "N/A", numa)
    console.print(_titled("[bold]Topology[/] (as nvidia-smi topo -m)", table))
    console.print()
    cells: dict[tuple[int, int], Text] = {}
    for (s, d), p in pairs.items():
        read, write = p.p2p.get(P2PCap.READ), p.p2p.get(P2PCap.WRITE)
        if read is P2PStatus.OK and write is P2PStatus.OK:
            via = "nvlink" if p.p2p.get(P2PCap.NVLINK) is P2PStatus.OK else "pcie"
            cells[(s, d)] = Text(f"OK {via}", style="green")
        else:
            worst = write if read is P2PStatus.OK else read
            cells[(s, d)] = Text(P2P_ABBREV.get(worst, "?") if worst else "?", style="red")
    console.print(_matrix("[bold]P2P read/write[/] (NVML; OK via nvlink or pcie, CNS chipset "
                          "not supported, DR disabled by regkey, NS not supported)\n"
                          "GPU(row) -> GPU(column)", gpus, cells))
    console.print()


def _ratio_text(j: Judged) -> Text:
    if j.ratio is None:
        return Text("ERR" if j.result.error else "—", style="red" if j.result.error else "dim")
    style = "green" if j.ratio >= 0.9 else ("yellow" if j.ratio >= 0.75 else "bold red")
    text = Text(f"{j.ratio:.2f}", style=style)
    if j.result.contended:
        text.append("*", style="bold yellow")
    return text


def render_ratios(console: Console, report: Report, tests: list[TestName]) -> None:
    pair_tests = [t for t in tests if test_scope(t) == "pair"]
    if not pair_tests:
        return
    judge = Expectations(report.inventory)
    by_key = {(r.test, r.src, r.dst): judge.judge(r) for r in report.results}
    pairs = sorted({(r.src, r.dst) for r in report.results
                    if r.src is not None and r.dst is not None})
    topo = {(p.src, p.dst): p.topology for p in report.inventory.pairs}
    table = Table(box=None, pad_edge=False)
    table.add_column("pair", style="bold")
    table.add_column("topo")
    for t in pair_tests:
        table.add_column(str(t), justify="right")
    for s, d in pairs:
        row = [by_key.get((t, s, d)) for t in pair_tests]
        table.add_row(f"{s} -> {d}", topo.get((s, d), "?"),  # type: ignore[arg-type]
                      *[_ratio_text(j) if j else Text("") for j in row])
    console.print(_titled("[bold]Ratio to expected[/] per pair (bandwidth: measured / "
                          "expected; latency: expected / measured; 1.00 = what the topology "
                          "promises, lower is worse; * contended)", table))
    console.print()


def render_cost(console: Console, report: Report) -> None:
    c = report.cost
    console.print(f"[bold]Sweep cost[/]: GPU time {c.gpu_time_s:.3f} s · wall time "
                  f"{c.wall_time_s:.3f} s · device memory at most "
                  f"{c.device_memory_bytes_max / (1 << 20):.0f} MiB per GPU · agent CPU "
                  f"{c.agent_cpu_s:.2f} s")
    for s in c.skipped:
        console.print(f"[yellow]skipped GPU {s.gpu}[/]: {s.reason}")
    contended = [r for r in report.results if r.contended]
    if contended:
        console.print(f"[yellow]* {len(contended)} sample(s) contended[/]: other traffic "
                      "crossed the probed links; read them as a share, not the link's capacity")
    for r in report.results:
        if r.error:
            where = (f"GPUs {r.gpus}" if r.src is None else f"GPU{r.src}" if r.dst is None
                     else f"GPU{r.src}->GPU{r.dst}")
            console.print(f"[red]{r.test} {where} failed[/]: {r.error}")
    for e in report.errors:
        console.print(f"[red]{e.where}[/]: {e.message}")


def render(console: Console, report: Report, tests: list[TestName]) -> None:
    host = report.host
    console.print(f"[bold]{host.hostname}[/] · fabric {host.fabric} · "
                  f"{len(report.inventory.gpus)} GPU(s)"
                  + (f" · {report.inventory.gpus[0].name}" if report.inventory.gpus else "")
                  + (f" · driver {host.driver_version}" if host.driver_version else ""))
    console.print()
    render_results(console, report, tests)
    render_gpu_tests(console, report, tests)
    render_topology(console, report)
    render_ratios(console, report, tests)
    render_cost(console, report)


def _pcie_text(g: GpuInfo) -> str:
    p = g.pcie
    if p.gen_current is None or p.width_current is None:
        return "N/A"
    text = f"Gen{p.gen_current} x{p.width_current}"
    if (p.gen_max, p.width_max) != (p.gen_current, p.width_current):
        text += f" (max Gen{p.gen_max} x{p.width_max})"
    return text


def render_gpus(console: Console, report: Report, gpus: tuple[int, ...] | None,
                tests: tuple[TestName, ...] | list[TestName] = GPU_TESTS) -> None:
    """What one GPU can show without a peer: its PCIe link and NVLink ports, its measured
    per-GPU tests (h2d, d2h, local), then the cost (no empty pair matrices)."""
    host = report.host
    console.print(f"[bold]{host.hostname}[/] · fabric {host.fabric} · "
                  f"{len(report.inventory.gpus)} GPU(s) on this host"
                  + (f" · driver {host.driver_version}" if host.driver_version else ""))
    console.print()
    table = Table(box=None, pad_edge=False)
    for column in ("GPU", "name", "memory", "PCIe link", "PCIe replays", "NVLinks up",
                   "NVLink speed", "CPU Affinity"):
        table.add_column(column, justify="left" if column in ("name", "CPU Affinity") else "right")
    for g in sorted(report.inventory.gpus, key=lambda g: g.index):
        if gpus is not None and g.index not in gpus:
            continue
        ports = [p for p in report.inventory.nvlinks if p.gpu == g.index]
        up = [p for p in ports if p.state is LinkState.UP]
        speed = max((p.speed_bps or 0.0 for p in up), default=0.0)
        replays = g.pcie.replay_count
        table.add_row(str(g.index), g.name, f"{g.memory_total_bytes / (1 << 30):.0f} GiB",
                      _pcie_text(g), "N/A" if replays is None else str(replays),
                      f"{len(up)}/{len(ports)}", f"{speed / 1e9:.1f} GB/s" if speed else "—",
                      g.cpu_affinity or "N/A")
    console.print(_titled("[bold]GPU[/] (no peer to test against)", table))
    console.print()
    render_gpu_tests(console, report, tests)
    render_cost(console, report)
