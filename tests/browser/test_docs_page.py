"""`/docs` renders in Chromium under the Content-Security-Policy every HTML answer carries:
Swagger UI lists the API's operations with no CSP violation, console error
or page error. Its own `serve` process (SQLite), not the demo fleet."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.helpers.serve import interrupt
from tests.app.serve_process import wait_healthy
from tests.browser.conftest import Watch, free_port


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data: Path = tmp_path_factory.mktemp("docs-serve")
    port = free_port()
    env = {**os.environ, "PEERWATCH_DATA_DIR": str(data)}
    env.pop("PEERWATCH_DATABASE_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "peerwatch.app.cli", "serve", "--port",
                             str(port),
                             "--no-local-probe", "--log-level", "warning"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc, within_s=120)
        yield base
    finally:
        interrupt(proc)


def test_docs_render_under_the_csp(browser, server: str) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(base_url=server)
    context.set_default_timeout(60_000)
    try:
        page = context.new_page()
        watch = Watch()
        watch.attach(page)
        answer = page.goto("/docs")
        assert answer is not None and "script-src 'self'" in \
            answer.headers["content-security-policy"]
        try:
            page.wait_for_selector(".opblock-summary-path")  # operations listed: the UI ran
        except Exception:  # noqa: BLE001 - what the page said is the useful failure
            pytest.fail("Swagger UI did not render: " + "\n".join(watch.problems))
        paths = page.locator(".opblock-summary-path").all_inner_texts()
        assert any("/api/v1/reports" in p for p in paths), paths
        assert not watch.problems, "\n".join(watch.problems)
    finally:
        context.close()
