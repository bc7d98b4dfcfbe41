"""Headless Chromium for the benches that time the dashboard (bench/dashboard.py, and the
fleet page read of bench/fleet.py): where it is, how it starts, and how a bench waits for a
view to draw (`main[data-ready]`, `data-drawn`: what the dashboard sets once it has)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]

DRAWN = """([view, hash]) => { const m = document.querySelector('main');
  return m.dataset.ready === view && m.dataset.drawn === hash; }"""


def wait_drawn(page: Any, view: str, hash_: str, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(DRAWN, [view, hash_]):
        error = page.evaluate("document.querySelector('main').dataset.error")
        if error:
            raise RuntimeError(f"the {view} page failed: {error}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the {view} page did not draw within {timeout_s:g} s")
        page.wait_for_timeout(10)
