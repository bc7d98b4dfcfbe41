"""Debian's Chromium driven by Playwright against a real peerwatch server.

The server is the real app (create_app, SQLite, uvicorn on a free loopback port) holding the
last hour of a small fleet, as the simulated fabric's probe passes report it: healthy hosts of
each preset, one HGX board whose GPU3 loses two NVLinks and whose GPU1 -> GPU2 path drops to
half speed half an hour ago, and two hosts whose names are HTML. Chromium is never downloaded
(`playwright install` cannot reach the internet here): a missing /usr/bin/chromium skips on
a developer's machine and fails in CI (`require`).

Every test gets a fresh page that fails the test on any console error, uncaught page error,
CSP violation or dialog (an XSS payload that ran would open one or set `window.__pwned`).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from probes.faults import BandwidthFactor, LinksDown
from tests.browser.seed import Episode, history, post
from tests.conftest import require

CHROMIUM = Path(os.environ.get("PEERWATCH_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
TOKEN = "browser-test-token"

FAULTY = "hgx8-faulty"
XSS_SCRIPT = "<script>window.__pwned=1</script>"
XSS_IMG = "<img src=x onerror=window.__pwned=1>"
CSP_WATCH = """document.addEventListener('securitypolicyviolation',
  e => console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));"""


@dataclass
class Fleet:
    url: str
    healthy: list[str] = field(default_factory=list)
    faulty: str = FAULTY
    xss: tuple[str, ...] = (XSS_SCRIPT, XSS_IMG)

    def api(self, path: str, **params: object) -> dict:
        response = httpx.get(f"{self.url}/api/v1{path}", params=params, timeout=30)
        response.raise_for_status()
        return response.json()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed_fleet(url: str) -> Fleet:
    fleet = Fleet(url=url)
    reports = history("hgx8", FAULTY, seed=3, every_s=900, episodes=[
        Episode(1800, (LinksDown(gpu=3, count=2), BandwidthFactor(src=1, dst=2, factor=0.5)))])
    for i, preset in enumerate(("h200x2", "mesh4", "pcie4")):
        name = f"{preset}-ok"
        fleet.healthy.append(name)
        reports += history(preset, name, seed=10 + i, span_s=0)
    for i, name in enumerate(fleet.xss):
        reports += history("h200x2", name, seed=20 + i, span_s=0)
    post(url, TOKEN, reports)
    return fleet


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    import uvicorn

    from app.config import Settings
    from app.db import make_engine, upgrade_to_head
    from app.main import create_app

    data_dir = tmp_path_factory.mktemp("dashboard-server")
    settings = Settings(data_dir=data_dir, probe_tokens=[TOKEN])
    engine = make_engine(settings)
    upgrade_to_head(engine)
    engine.dispose()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, name="dashboard-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield seed_fleet(f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(timeout=10)


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
    page.goto("/#/fleet")
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
DRAWN = """([view, hash]) => { const m = document.querySelector('main');
  return m.dataset.ready === view && m.dataset.drawn === hash; }"""


def open_view(page, path: str, view: str) -> None:  # type: ignore[no-untyped-def]
    """Show `path` ('/#/fleet', '/?refresh=1#/host/x') and wait until the view has drawn
    that very route. When only the hash differs, only the hash changes (no reload)."""
    document, _, fragment = path.partition("#")
    here = page.url.partition("#")[0]
    if fragment and here.endswith(document) and document.startswith("/"):
        page.evaluate("h => { location.hash = h; }", f"#{fragment}")
    else:
        page.goto(path)
    wait_until(page, DRAWN, [view, page.evaluate(NORMALISED_HASH, f"#{fragment}")], timeout_s=20)


def wait_until(page, predicate: str, arg: object = None, timeout_s: float = 10) -> None:  # type: ignore[no-untyped-def]
    """Poll a JS function until it returns truthy. (page.wait_for_function evaluates strings
    with eval inside the page, which our Content-Security-Policy rightly refuses.)"""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(predicate, arg):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {predicate} ({arg!r})")
        page.wait_for_timeout(50)


def wait_hash(page, part: str) -> None:  # type: ignore[no-untyped-def]
    wait_until(page, "part => location.hash.includes(part)", part)


def screenshot(page, name: str) -> Path:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
