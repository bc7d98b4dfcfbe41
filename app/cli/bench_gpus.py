"""The per-GPU tests in `peerwatch bench`: one row per GPU with h2d, d2h and local, each next to
what the GPU's PCIe link promises (`app.analysis.expected.expected_gpu`).

A one-GPU host has no pair to measure, so this table is what it shows of measured speed: a
host <-> GPU figure well below expected is the evidence to send the vendor.
"""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from peerwatch.app.cli.bench_expect import Expectations, Judged
from peerwatch.probes.report import GPU_TESTS, JOINT_TESTS, Report, TestName

ABOUT_GPU = ("h2d / d2h: copy engine, pinned host memory on the GPU's NUMA node <-> the GPU; "
             "local: copy within the GPU's memory (read + write counted once)")


def _cell(j: Judged | None) -> Text:
    if j is None:
        return Text("")
    r = j.result
    if r.error is not None or r.value is None:
        return Text("ERR", style="bold red")
    text = Text(f"{r.value / 1e9:.1f}")
    if j.ratio is not None:
        style = "green" if j.ratio >= 0.9 else ("yellow" if j.ratio >= 0.75 else "bold red")
        text.append(f" ({j.ratio:.2f})", style=style)
    return text


def render_gpu_tests(console: Console, report: Report,
                     tests: tuple[TestName, ...] | list[TestName]) -> None:
    """GB/s per GPU and test, with the ratio to expected in brackets and the basis."""
    shown = [t for t in (*GPU_TESTS, *JOINT_TESTS) if t in tests]
    judge = Expectations(report.inventory)
    by_key = {(r.test, r.src): judge.judge(r) for r in report.results if r.test in shown}
    gpus = sorted({gpu for _, gpu in by_key if gpu is not None})
    if not gpus:
        return
    table = Table(box=None, pad_edge=False)
    table.add_column("GPU", justify="right", style="bold")
    for t in shown:
        table.add_column(f"{t} GB/s", justify="right")
    table.add_column("expected h2d/d2h from")
    for g in gpus:
        row = [_cell(by_key.get((t, g))) for t in shown]
        bases = {j.expectation.basis for (t, gpu), j in by_key.items()
                 if gpu == g and j.expectation is not None}
        table.add_row(str(g), *row, Text(", ".join(sorted(bases)) or "—", style="dim"))
    title = (f"[bold]Per GPU[/] — {ABOUT_GPU}\n(ratio to expected in brackets; local is "
             "judged against its own history)")
    console.print(Group(Text.from_markup(title), table))
    console.print()
