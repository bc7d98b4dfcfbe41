"""`make bench`: run every benchmark module in bench/ that can run on this machine.

Each module defines `main() -> int` and prints its figures as ratios against a stated
reference. GPU-only benchmarks say so and return 0 where no GPU is present.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> int:
    status = 0
    here = Path(__file__).parent
    for info in sorted(pkgutil.iter_modules([str(here)]), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"bench.{info.name}")
        print(f"== bench/{info.name}.py")
        status |= int(module.main() or 0)
    return status


if __name__ == "__main__":
    from bench._cli import no_options

    no_options(__doc__, __file__)
    sys.exit(main())
