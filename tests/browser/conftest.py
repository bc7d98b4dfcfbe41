"""Debian's Chromium driven by Playwright against `peerwatch demo` (see `demo_fleet.py`).

Chromium is never downloaded (`playwright install` cannot reach the internet here): a
missing /usr/bin/chromium skips on a developer's machine and fails in CI (`require`).

All tests share one page that has loaded the dashboard once (plotly.js takes seconds to
compile on a busy machine); they move between views the way a user does, by the URL's hash.
Each test fails on any console error, uncaught page error, CSP violation or dialog during it
(an XSS payload that ran would open one, or set `window.__pwned`).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.demo_fleet import (
    FAULTY,
    STALE,
    XSS_IMG,
    XSS_SCRIPT,
    DemoProcess,
    Fleet,
    Keeper,
    own_hosts,
)
from tests.browser.seed import Store
from tests.conftest import SETTLE_S, require

__all__ = ["FAULTY", "STALE", "XSS_IMG", "XSS_SCRIPT", "Fleet"]

CHROMIUM = Path(os.environ.get("PEERWATCH_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
# The shared page does not refresh by itself (a refresh mid-test would race the checks);
# test_refresh_keeps_the_pair_and_the_zoom loads its own page with ?refresh=1.
SHARED_PAGE = "/?refresh=86400#/fleet"
CSP_WATCH = """document.addEventListener('securitypolicyviolation',
  e => console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_demo(data_dir: Path) -> DemoProcess:
    """A reporting demo on a free port; a new port when another process took the one picked
    (the pick releases it before the demo binds it, and parallel tests pick ports too)."""
    for _ in range(5):
        demo = DemoProcess(data_dir, free_port())
        try:
            demo.wait_reporting()
            return demo
        except RuntimeError:
            demo.stop()
            if not demo.lost_its_port():
                raise
    raise RuntimeError("peerwatch demo lost its port to another process five times")


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    demo = start_demo(tmp_path_factory.mktemp("demo"))
    store = keeper = None
    try:
        store = Store(demo.data_dir)
        fleet = Fleet(url=demo.url, own=own_hosts(store))
        keeper = Keeper(store, fleet.own)
        keeper.start()
        yield fleet
    finally:
        if keeper is not None:
            keeper.stop()
        if store is not None:
            store.close()
        demo.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    require(CHROMIUM.is_file(), f"Chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - the dev extra installs it
        require(False, "Playwright for Python (pip install -e '.[dev]')")
        raise
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Watch:
    """What a page reported that a test must fail on; cleared before each test."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def attach(self, page) -> None:  # type: ignore[no-untyped-def]
        page.add_init_script(CSP_WATCH)
        page.on("console", lambda m: self.problems.append(f"console.{m.type}: {m.text}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("dialog", self.on_dialog)

    def on_dialog(self, dialog) -> None:  # type: ignore[no-untyped-def]
        self.problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()


@pytest.fixture(scope="session")
def browser_context(browser, fleet: Fleet) -> Iterator[tuple[object, Watch]]:  # type: ignore[no-untyped-def]
    context = browser.new_context(base_url=fleet.url, viewport={"width": 1440, "height": 1000})
    context.set_default_timeout(20_000)
    watch = Watch()
    yield context, watch
    context.close()


@pytest.fixture(scope="session")
def shared_page(browser_context):  # type: ignore[no-untyped-def]
    """One page for the whole session: views change by hash, as a user's clicks do, so
    plotly.js is loaded and compiled once (seconds on a busy CI machine), not per test."""
    context, watch = browser_context
    page = context.new_page()
    watch.attach(page)
    page.goto(SHARED_PAGE)
    page.wait_for_selector('main[data-ready="fleet"]')
    return page


@pytest.fixture
def page(shared_page, browser_context):  # type: ignore[no-untyped-def]
    """The shared page, failing the test on any console error, page error, CSP violation or
    dialog that happened during it, and on an XSS payload having run."""
    _, watch = browser_context
    watch.problems.clear()
    yield shared_page
    pwned = shared_page.evaluate("window.__pwned === 1")
    assert not pwned, "an XSS payload from a report ran"
    assert not watch.problems, "the page reported problems:\n" + "\n".join(watch.problems)


@pytest.fixture
def fresh_page(browser_context):  # type: ignore[no-untyped-def]
    """A page of its own (for tests that load a different URL, e.g. ?refresh=1)."""
    context, watch = browser_context
    page = context.new_page()
    watch.attach(page)
    problems_before = len(watch.problems)
    yield page
    assert not page.evaluate("window.__pwned === 1"), "an XSS payload from a report ran"
    page.close()
    new = watch.problems[problems_before:]
    assert not new, "the page reported problems:\n" + "\n".join(new)


NORMALISED_HASH = "h => { const a = document.createElement('a'); a.href = h; return a.hash; }"
# Drawn, and no panel still loading after the first draw (the host page's lower panels).
DRAWN = """([view, hash]) => { const m = document.querySelector('main');
  return m.dataset.ready === view && m.dataset.drawn === hash
    && !m.querySelector('[data-pending]'); }"""


def open_view(page, path: str, view: str) -> None:  # type: ignore[no-untyped-def]
    """Show `path` ('/#/fleet', '/?refresh=1#/host/x') and wait until the view has drawn
    that very route. On a page showing the dashboard, a '/#...' path changes only the hash,
    as a click in the dashboard does (no reload)."""
    _, _, fragment = path.partition("#")
    if path.startswith("/#") and "#" in page.url:
        page.evaluate("h => { location.hash = h; }", f"#{fragment}")
    else:
        page.goto(path)
    wait_until(page, DRAWN, [view, page.evaluate(NORMALISED_HASH, f"#{fragment}")])


def wait_until(page, predicate: str, arg: object = None, timeout_s: float = SETTLE_S) -> None:  # type: ignore[no-untyped-def]
    """Poll a JS function until it returns truthy. (page.wait_for_function evaluates strings
    with eval inside the page, which our Content-Security-Policy rightly refuses.)"""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(predicate, arg):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {predicate} ({arg!r})")
        page.wait_for_timeout(50)


def is_pair_series(r) -> bool:  # type: ignore[no-untyped-def]
    """The pair's series answer (not the link counters' or the GPUs' series)."""
    return "/series?" in r.url and "/links/" not in r.url and "/gpus/" not in r.url


def wait_hash(page, part: str) -> None:  # type: ignore[no-untyped-def]
    wait_until(page, "part => location.hash.includes(part)", part)


def screenshot(page, name: str) -> Path:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.mouse.move(1, 1)  # no hover label over the charts
    page.evaluate("window.scrollTo(0, 0)")  # the sticky header at the top, where it belongs
    page.screenshot(path=str(path), full_page=True)
    return path
