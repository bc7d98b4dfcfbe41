"""The dashboard draws a test kind it has never heard of: a per-GPU kind declared in
`probes/test_kinds.py` at test time gets its column, label and judged cells in the host page's
per-GPU table, because the page draws from the server's catalogue (`GET /api/v1/tests`).

The server runs in this process (uvicorn in a thread), so it sees the table as the test
changed it; the report comes from the simulated probe in the same process."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine, upgrade_to_head
from peerwatch.probes import test_kinds
from peerwatch.probes.report import TestName, Unit
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from peerwatch.probes.test_kinds import Cost, Expect, Sim, TestKind
from tests.browser.conftest import free_port

TOKEN = "probe-secret"
HOST = "sim-h200x2"
THROWAWAY = TestKind(
    "zz_host", "gpu", Unit.BYTES_PER_SECOND, Cost(8 << 20, copies=2),
    Expect("host_copy", host=0.5), Sim("host_copy", calibrated_as="h2d"),
    "a throw-away per-GPU kind a test declares", label="throw-away copy")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    monkeypatch.setattr(test_kinds, "TEST_KINDS", (*test_kinds.TEST_KINDS, THROWAWAY))
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'peerwatch.db'}",
                        data_dir=tmp_path, probe_tokens=[TOKEN])
    engine = make_engine(settings)
    upgrade_to_head(engine)
    engine.dispose()
    port = free_port()
    uv = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port,
                                       log_level="warning"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not uv.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        uv.should_exit = True
        thread.join(30)


def test_the_host_page_draws_a_declared_per_gpu_kind(server: str, browser) -> None:  # type: ignore[no-untyped-def]
    test = TestName(THROWAWAY.name)
    report = build_report(SimulatedFabric("h200x2", seed=1),
                          options=SweepOptions(tests=(TestName.H2D, test)))
    posted = httpx.post(f"{server}/api/v1/reports", content=report.model_dump_json(),
                        headers={"Authorization": f"Bearer {TOKEN}",
                                 "Content-Type": "application/json"}, timeout=60)
    assert posted.status_code == 201, posted.text
    context = browser.new_context(base_url=server, viewport={"width": 1440, "height": 1000})
    context.set_default_timeout(60_000)
    try:
        page = context.new_page()
        page.goto(f"/#/host/{HOST}")
        cells = page.locator(f'table[aria-label="Per-GPU copies"] td[data-test="{test}"]')
        cells.first.wait_for()
        head = page.locator('table[aria-label="Per-GPU copies"] thead th')
        assert f"{test} (throw-away copy)" in head.all_inner_texts()
        assert cells.count() == 2  # both GPUs of the pair preset, each judged
        assert set(cells.evaluate_all("cs => cs.map(c => c.dataset.verdict)")) == {"healthy"}
    finally:
        context.close()
