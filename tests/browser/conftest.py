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
    reports = history("hgx8", FAULTY, seed=3, episodes=[
        Episode(1800, (LinksDown(gpu=3, count=2), BandwidthFactor(src=1, dst=2, factor=0.5)))])
    for i, preset in enumerate(("h200x2", "mesh4", "pcie4")):
        name = f"{preset}-ok"
        fleet.healthy.append(name)
        reports += history(preset, name, seed=10 + i, every_s=1200)
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


@pytest.fixture
def page(browser, fleet: Fleet) -> Iterator[object]:  # type: ignore[no-untyped-def]
    context = browser.new_context(base_url=fleet.url, viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(15_000)
    problems: list[str] = []
    page.add_init_script(CSP_WATCH)
    page.on("console", lambda m: problems.append(f"console.{m.type}: {m.text}")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))

    def on_dialog(dialog: object) -> None:
        problems.append(f"dialog: {dialog.message}")  # type: ignore[attr-defined]
        dialog.dismiss()  # type: ignore[attr-defined]

    page.on("dialog", on_dialog)
    page.problems = problems  # type: ignore[attr-defined]
    yield page
    pwned = page.evaluate("window.__pwned === 1")
    context.close()
    assert not pwned, "an XSS payload from a report ran"
    assert not problems, "the page reported problems:\n" + "\n".join(problems)


def open_view(page, path: str, view: str) -> None:  # type: ignore[no-untyped-def]
    """Go to `path` (e.g. '/#/fleet') and wait until the view has drawn."""
    page.goto(path)
    page.wait_for_selector(f'main[data-ready="{view}"]')


def screenshot(page, name: str) -> Path:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
