"""Shared test helpers.

Real parts (PostgreSQL, Chromium, promtool, Alertmanager) are used for real. Where one is
missing, a developer's run skips those tests, but CI (`PEERWATCH_REQUIRE_SERVICES=1`, set by
`.ci/run`) fails instead, so a green CI always means the real part was exercised.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest

from tests.parallel import assign_groups

REQUIRE_SERVICES = os.environ.get("PEERWATCH_REQUIRE_SERVICES") == "1"
# The longest a test waits for a server to start or a judgement to land. Tests wait on the
# condition, so a quick machine never waits this out; a loaded one (two CPU burners beside
# the suite on 2 cores) still passes.
SETTLE_S = 120.0
T = TypeVar("T")


def eventually(condition: Callable[[], T], within_s: float = SETTLE_S,
               poll_s: float = 0.1) -> T | None:
    """`condition()` polled until it is true (its value is returned) or `within_s` has
    passed (None: the caller's assertion says what never happened)."""
    deadline = time.monotonic() + within_s
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value or None
        time.sleep(poll_s)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `--dist loadgroup` (make test), tests sharing an expensive fixture share a
    worker (tests/parallel.py)."""
    if getattr(config.option, "loadgroup", False):
        assign_groups(items)


def require(available: bool, what: str) -> None:
    """Skip (developer) or fail (CI) when a real part the test needs is missing."""
    if available:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"{what} is required in CI but is not available", pytrace=False)
    pytest.skip(f"{what} is not available")


@contextmanager
def background(argv: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real service process, its output in `log`; stopped (terminate, then kill) on exit."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
