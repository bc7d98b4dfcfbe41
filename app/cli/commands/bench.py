"""`peerwatch bench`: measure this host's GPU fabric once and print it.

    peerwatch bench                                   real GPUs, or the simulated H200 pair
    peerwatch bench --fabric simulated:hgx8 --json    one JSON document on stdout
    peerwatch bench --tests ce_write,latency --gpus 0,1,2

Bad arguments (an unknown preset, test or GPU index) end in one line on stderr and exit
status 2, raised as `BadProbeRequest` and reported by `app.cli`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from peerwatch.app.cli.bench_expect import Expectations
from peerwatch.app.cli.bench_nics import nic_document, render_nics
from peerwatch.app.cli.bench_view import render, render_gpus
from peerwatch.probes.budgets import DEFAULT_BUDGETS
from peerwatch.probes.errors import BadProbeRequest
from peerwatch.probes.fabric import Fabric
from peerwatch.probes.fabric_select import FALLBACK_PRESET, fabric_choices, open_fabric
from peerwatch.probes.report import Report, TestName, default_tests
from peerwatch.probes.sim.presets import PRESET_NAMES
from peerwatch.probes.sweep import SweepOptions, SweepProgress, build_report

ALL_TESTS = ",".join(t.value for t in TestName)
DEFAULT_TESTS = ",".join(t.value for t in default_tests())  # the opt-in ones asked by name
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_BUSY_PCT = 10.0


def _default_samples() -> str:
    """"ce_write, ce_read 2; ce_bidir, ... 3": each test's default sample count."""
    by_count: dict[int, list[str]] = {}
    for test, budget in DEFAULT_BUDGETS.items():
        by_count.setdefault(budget.samples, []).append(test.value)
    return "; ".join(f"{', '.join(tests)} {n}" for n, tests in sorted(by_count.items()))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench", help="measure this host's GPU fabric once and print the matrices",
        description="Run peerwatch's transfer tests between every pair of GPUs on this host\n"
        "and print one matrix per test (row = source GPU, column = destination, like\n"
        "nvbandwidth), the topology and P2P status, each pair's ratio to expected\n"
        "(bandwidth measured/expected, latency expected/measured) and what the sweep\n"
        "cost. Without GPUs, --fabric auto falls back to a simulated host. What each\n"
        "test measures: docs/probe-tests.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="tests: " + ", ".join(t.value for t in TestName)
        + "\nfabrics: " + ", ".join(fabric_choices())
        + "\nexamples:\n  peerwatch bench --fabric simulated:hgx8 --tests ce_write,latency\n"
        "  peerwatch bench --gpus 0,1 --json > bench.json",
    )
    p.add_argument("--fabric", default="auto", metavar="NAME",
                   help=f"auto (real GPUs, else simulated:{FALLBACK_PRESET}), nvml, or "
                   f"simulated:<preset> with preset one of {', '.join(PRESET_NAMES)} "
                   "(default: auto)")
    p.add_argument("--tests", default=DEFAULT_TESTS, metavar="LIST",
                   help="comma-separated tests to run (default: all but the opt-in "
                   "gdr_loopback, which moves data through the GPU's nearest RDMA NIC, and "
                   "nvls_allreduce, which needs NCCL_NVLS_ENABLE=1)")
    p.add_argument("--gpus", default=None, metavar="LIST",
                   help="comma-separated GPU indices to test; pair tests run over every "
                   "ordered pair of them (default: every GPU)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document (results with expected/ratio, inventory, "
                   "cost) instead of tables (default: off)")
    p.add_argument("--seed", type=int, default=0, metavar="N",
                   help="noise seed of a simulated fabric; same seed, same numbers (default: 0)")
    p.add_argument("--samples", type=int, default=None, metavar="N",
                   help="timed samples per test, the median is reported (default: per "
                   f"test, from probes/budgets.py: {_default_samples()})")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help="watchdog per test; a test running longer is recorded as hung and "
                   "its GPUs are left alone for the rest of the run "
                   f"(default: {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--force", action="store_true",
                   help="also test GPUs that run compute processes or are more than "
                   f"{DEFAULT_BUSY_PCT:g}%% utilised (default: off, such GPUs are skipped)")
    p.set_defaults(func=run)


def parse_tests(text: str) -> list[TestName]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise BadProbeRequest("--tests is empty")
    known = {t.value: t for t in TestName}
    for name in names:
        if name not in known:
            raise BadProbeRequest(f"unknown test {name!r} (choose from: {ALL_TESTS})")
    return list(dict.fromkeys(known[n] for n in names))


def parse_gpus(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        gpus = tuple(int(g) for g in text.split(",") if g.strip())
    except ValueError:
        raise BadProbeRequest(f"--gpus must be comma-separated GPU indices, got {text!r}") from None
    if any(g < 0 for g in gpus) or not gpus:
        raise BadProbeRequest(f"--gpus must name GPU indices 0 or above, got {text!r}")
    return tuple(dict.fromkeys(gpus))  # "0,0" is GPU 0 once


def options_from(args: argparse.Namespace, tests: list[TestName]) -> SweepOptions:
    if args.samples is not None and args.samples < 1:
        raise BadProbeRequest(f"--samples must be at least 1, got {args.samples}")
    if args.timeout <= 0:
        raise BadProbeRequest(f"--timeout must be positive, got {args.timeout:g}")
    budgets = dict(DEFAULT_BUDGETS)
    if args.samples is not None:
        budgets = {t: type(b)(b.bytes_per_copy, b.copies, args.samples, b.warmup)
                   for t, b in budgets.items()}
    return SweepOptions(tests=tuple(tests), gpus=parse_gpus(args.gpus), budgets=budgets,
                        timeout_s=args.timeout, busy_utilization_pct=DEFAULT_BUSY_PCT,
                        force=args.force)


def json_document(report: Report) -> dict[str, Any]:
    """The report as JSON, each result carrying `expected` (its unit) and `ratio`."""
    doc = report.model_dump(mode="json")
    judge = Expectations(report.inventory)
    for entry, result in zip(doc["results"], report.results, strict=True):
        j = judge.judge(result)
        entry["expected"] = j.expectation.value if j.expectation else None
        entry["expected_basis"] = j.expectation.basis if j.expectation else None
        entry["ratio"] = j.ratio
    if report.inventory.nics or any(c.nic_ports for c in report.counters):
        doc["nics"] = nic_document(report)
    return doc


def run(args: argparse.Namespace) -> int:
    tests = parse_tests(args.tests)
    options = options_from(args, tests)
    fabric = open_fabric(args.fabric, seed=args.seed,
                         on_fallback=lambda msg: print(f"peerwatch bench: {msg}", file=sys.stderr))
    try:
        report = _measure(fabric, options, show_progress=sys.stderr.isatty())
    finally:
        fabric.close()
    single = one_gpu_note(report, options.gpus)
    if single:
        print(f"peerwatch bench: {single}", file=sys.stderr)
    if args.json:
        json.dump(json_document(report), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    out = Console()
    if not out.is_terminal:
        out = Console(width=max(120, shutil.get_terminal_size().columns))
    if single:
        render_gpus(out, report, options.gpus, tests)
    else:
        render(out, report, tests)
    render_nics(out, report)
    return 0


def one_gpu_note(report: Report, selected: tuple[int, ...] | None) -> str | None:
    """The one line for a host with one GPU, or a selection of one; None with two or more."""
    on_host = sorted(g.index for g in report.inventory.gpus)
    gpus = list(selected) if selected is not None else on_host
    if len(gpus) >= 2:
        return None
    if not gpus:
        where = "this host has no GPUs"
    elif selected is not None and len(on_host) > 1:
        where = f"one GPU selected (GPU {gpus[0]})"
    else:
        where = f"this host has one GPU (GPU {gpus[0]})"
    return (f"{where}: the pair tests need two GPUs; showing what one GPU can tell: its "
            "PCIe link, NVLink ports, its host <-> GPU and local copies, and the probe's cost")


def _measure(fabric: Fabric, options: SweepOptions, *, show_progress: bool) -> Report:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True,
                  disable=not show_progress) as bar:
        task = bar.add_task("measuring", total=None)

        def advance(p: SweepProgress) -> None:
            bar.update(task, completed=p.done, total=p.total, description=p.spec.label())

        return build_report(fabric, options=options, progress=advance)
