"""Every bench's command line: `python -m bench.NAME --help` prints what the bench measures
and exits 0, and an argument the bench does not take is refused by name (exit 2), where a
bench that read no arguments ran minutes of benchmark for either.

A bench without options calls `no_options` before its `main()`; one with options adds them
to `parser`, so each is named as it is run and shows its docstring as its help.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


BENCH_DIR = Path(__file__).resolve().parents[1]


def module_of(file: str) -> str:
    """The module name `python -m` runs the bench at `file` by: "bench" for bench/__main__.py,
    "bench.fleet", "bench.gpu.pcie" (the GPU checks sit in a folder of their own)."""
    parts = Path(file).resolve().relative_to(BENCH_DIR).with_suffix("").parts
    return ".".join(["bench", *(p for p in parts if p != "__main__")])


def parser(doc: str | None, file: str) -> argparse.ArgumentParser:
    """The parser of the bench module at `file` (its `__file__`), with `doc` (its docstring)
    as the help text, kept as written: the docstrings lay out tables and lists."""
    return argparse.ArgumentParser(prog=f"python -m {module_of(file)}", description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def compare_parser(doc: str | None, file: str) -> argparse.ArgumentParser:
    """`parser` with `--before`, for a bench that compares two trees (`before_and_after`)."""
    p = parser(doc, file)
    p.add_argument("--before", type=Path, default=None,
                   help="a checkout of the code to compare with (default: none, after only)")
    return p


def no_options(doc: str | None, file: str, argv: Sequence[str] | None = None) -> None:
    """A bench that takes no arguments (`argv`: the command line's, by default): `--help`
    is answered, anything else refused."""
    parser(doc, file).parse_args(argv)


def before_and_after(args: argparse.Namespace, here: Path,
                     run_one: Callable[[Path, argparse.Namespace], T | None],
                     report: Callable[[T | None, T], Any]) -> int:
    """A bench comparing two trees in one run: `args.before` (a checkout, or None) first,
    then `here`; `run_one` answers None where a part it needs is missing (it said so)."""
    before = run_one(args.before.resolve(), args) if args.before else None
    after = run_one(here, args)
    if after is not None:  # else: "postgresql: skipped" was said; CI has it
        report(before, after)
    return 0
