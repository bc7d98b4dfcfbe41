"""Every benchmark still runs: each `bench/` module `make bench` runs, at its smoke size.

`PEERWATCH_BENCH_SIZE=smoke` (bench/helpers/size.py) shrinks a bench to seconds: the same code
paths with a few hosts, rows and repeats. A bench that crashes, or whose own correctness
checks fail, fails here; its figures are not looked at (the suite never times anything,
and a bench's budgets decide nothing at smoke size).

The GPU benches (bench/gpu/*.py, probe_accuracy, probe_contention) cannot measure here:
what runs is their CPU side, the path that finds no GPU and says "skipped". The GPU shell
scripts (bench/gpu/*.sh) are checked for syntax and for naming only modules and files that
exist, so a rename cannot leave them pointing at nothing.
"""

from __future__ import annotations

import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import bench_modules
from tests.conftest import REQUIRE_SERVICES

ROOT = Path(__file__).resolve().parents[2]
BENCHES = sorted(f"{prefix}{m.name}" for folder, prefix in (("bench", ""), ("bench/gpu", "gpu."))
                 for m in pkgutil.iter_modules([str(ROOT / folder)])
                 if not m.ispkg and not m.name.startswith("_"))
GPU_ONLY = {"gpu.all_to_all", "gpu.driver_health", "gpu.events", "gpu.evidence",
            "gpu.fabric_check", "gpu.pcie", "gpu.snapshot", "probe_accuracy", "probe_contention"}
# what a bench prints where a real part it needs is missing; CI has them all
MISSING_PART = re.compile(r"postgresql: skipped|skipped: no Chromium|skipped, \S+ unreachable")
LIMIT_S = 600
# lines a bench must print with a figure, where its parts are here (not "skipped")
PRINTS = {"overload": re.compile(r"^post_server_p99 +\S+ +[\d.]+ .*^burst_vs_cpu_allows +\S+ +"
                                r"[\d.]+ ", re.MULTILINE | re.DOTALL),
          "hostile_clients": re.compile(r"^probe_2xx_share +\S+ +1\.00 .*^posters_answered_share"
                                       r" +\S+ +1\.00 .*^rss_growth_mb +\S+ +[\d.]+ ",
                                       re.MULTILINE | re.DOTALL),
          # the sweep against the honest floor, CPU and instructions (issue 37); the
          # instructions line says "not counted (...)" where callgrind is missing
          "sweep_profile": re.compile(r"^  CPU with PostgreSQL's backend +project +[\d.]+ ms, "
                                      r"floor +[\d.]+ ms = [\d.]+x the floor.*^  instructions"
                                      r"(?: \(callgrind.*project +[\d.]+ M, floor +[\d.]+ M = "
                                      r"[\d.]+x the floor|: not counted)",
                                      re.MULTILINE | re.DOTALL)}


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PEERWATCH_BENCH_SIZE": "smoke", "PYTHONUNBUFFERED": "1"}
    env.pop("PEERWATCH_BENCH_HOSTS", None)
    return subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=LIMIT_S)


def test_every_bench_module_is_covered_here() -> None:
    assert "ingest" in BENCHES and GPU_ONLY <= set(BENCHES)


@pytest.mark.parametrize("name", BENCHES)
def test_the_bench_runs_at_smoke_size(name: str) -> None:
    done = _run("-m", f"bench.{name}")
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"bench/{name}.py exited {done.returncode}:\n{output[-6000:]}"
    assert "Traceback" not in output, output[-6000:]
    if name in GPU_ONLY:
        assert "skipped" in output.lower() or "GPU" in output, output[-2000:]
    if name in PRINTS and not MISSING_PART.search(output):
        assert PRINTS[name].search(done.stdout), f"bench/{name}.py:\n{done.stdout[-3000:]}"
    if REQUIRE_SERVICES:
        missing = MISSING_PART.search(output)
        assert missing is None, f"bench/{name}.py ran without a required part: {missing}"


def test_make_bench_runs_every_module() -> None:
    """`python -m bench` finds the same modules this test runs (one runner, one list)."""
    source = (ROOT / "bench" / "__main__.py").read_text()
    assert "pkgutil.iter_modules" in source and 'startswith("_")' in source
    assert bench_modules() == BENCHES


@pytest.mark.parametrize("name", ["fleet", "metrics_scale"])
def test_a_bench_with_options_explains_them(name: str) -> None:
    done = _run("-m", f"bench.{name}", "--help")
    assert done.returncode == 0 and "--hosts" in done.stdout, done.stdout + done.stderr


def _named_in(script: str) -> tuple[set[str], set[str]]:
    """(python -m modules, repository files) a shell script runs."""
    modules = set(re.findall(r"python3? -m ((?:bench|app|tests)[\w.]*)", script))
    files = set(re.findall(r"((?:bench|tests)/[\w/.-]+\.(?:py|sh))", script))
    return modules, files


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "bench" / "gpu").glob("*.sh")))
def test_the_gpu_script_parses_and_names_what_exists(script: str) -> None:
    path = ROOT / "bench" / "gpu" / script
    syntax = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True,
                            timeout=60)
    assert syntax.returncode == 0, syntax.stderr
    modules, files = _named_in(path.read_text())
    for module in sorted(modules):
        target = ROOT / Path(*module.split("."))
        assert target.with_suffix(".py").is_file() or (target / "__init__.py").is_file(), (
            f"{script} runs python -m {module}, which does not exist")
    for name in sorted(files):
        assert (ROOT / name).exists(), f"{script} names {name}, which does not exist"
