"""`make bench`: run every benchmark module in bench/ and bench/gpu/ that can run here.

Each module defines `main() -> int` and prints its figures as ratios against a stated
reference. GPU-only benchmarks say so and return 0 where no GPU is present.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

HERE = Path(__file__).parent
FOLDERS = ("", "gpu")  # bench/ and bench/gpu/ hold the benches; bench/helpers/ holds none


def bench_modules() -> list[str]:
    """Every bench, as its name under bench ("fleet", "gpu.pcie"): the modules of FOLDERS,
    but not packages and not those whose name starts with "_" (helpers, tuning aids)."""
    names = []
    for folder in FOLDERS:
        prefix = f"{folder}." if folder else ""
        names += [prefix + info.name for info in pkgutil.iter_modules([str(HERE / folder)])
                  if not info.ispkg and not info.name.startswith("_")]
    return sorted(names)


def main() -> int:
    status = 0
    for name in bench_modules():
        module = importlib.import_module(f"bench.{name}")
        print(f"== bench/{name.replace('.', '/')}.py")
        status |= int(module.main() or 0)
    return status


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    sys.exit(main())
