"""Every bench's command line: `python -m bench.NAME --help` prints what the bench measures
and exits 0, and an argument the bench does not take is refused by name (exit 2), where a
bench that read no arguments ran minutes of benchmark for either.

A bench without options calls `no_options` before its `main()`; one with options adds them
to `parser`, so each is named as it is run and shows its docstring as its help.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


def parser(doc: str | None, file: str) -> argparse.ArgumentParser:
    """The parser of the bench module at `file` (its `__file__`), with `doc` (its docstring)
    as the help text, kept as written: the docstrings lay out tables and lists."""
    stem = Path(file).stem
    prog = "python -m bench" if stem == "__main__" else f"python -m bench.{stem}"
    return argparse.ArgumentParser(prog=prog, description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def no_options(doc: str | None, file: str, argv: Sequence[str] | None = None) -> None:
    """A bench that takes no arguments (`argv`: the command line's, by default): `--help`
    is answered, anything else refused."""
    parser(doc, file).parse_args(argv)
