"""Every bench answers its command line before it measures anything (bench/helpers/cli.py):
`python -m bench.NAME --help` prints a usage and exits 0, and an argument the bench does not
take is refused by name (exit 2). A bench that read no arguments ran its whole benchmark for
either (`bench.ingest --help`: minutes of CPU), so here each module, `python -m bench`
included, is run both ways (at smoke size, should one still ignore them: then it prints no
usage, or exits 0 where it should refuse).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.bench.test_bench_smoke import BENCHES, ROOT

MODULES = ["bench", *(f"bench.{name}" for name in BENCHES)]
LIMIT_S = 300  # generous: an import takes seconds, even on a loaded machine


def _run(module: str, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PEERWATCH_BENCH_")},
           "PEERWATCH_BENCH_SIZE": "smoke"}
    return subprocess.run([sys.executable, "-m", module, *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=LIMIT_S)


@pytest.mark.parametrize("module", MODULES)
def test_help_prints_a_usage_and_exits_0(module: str) -> None:
    done = _run(module, "--help")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.startswith(f"usage: python -m {module}"), done.stdout[:2000]


@pytest.mark.parametrize("module", MODULES)
def test_an_unknown_argument_is_refused_by_name(module: str) -> None:
    done = _run(module, "--no-such-option")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "unrecognized arguments: --no-such-option" in done.stderr, done.stderr[-2000:]
