"""Many probes posting at once to the SQLite default: every report stored, none refused.

SQLite has one writer at a time; the others wait up to PEERWATCH_SQLITE_BUSY_TIMEOUT_MS.
With 5 s the demo's twelve probes plus its backfill sometimes got HTTP 500 "database is
locked" (the probes spooled and retried, nothing was lost); 16 writers at once here must
all be stored on the first try. What is tested is SQLite's locking, not the machine's speed:
each report may wait for an ingest slot as long as SETTLE_S (on a loaded machine 16 writers
can queue longer than the default 2 s, which is answered 503 by design, and retried by a
real probe). One report goes first, alone: until a report has let go of its slot the
ingest gate does not know how long one is held and assumes a short hold (PRIOR_HOLD_S in
app/ingest/gate.py), so a cold server may refuse part of a first-instant burst with 429.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from peerwatch.probes.report import TestName
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.conftest import SETTLE_S
from tests.probes.live_server import TOKEN, live_server, server_settings, stored

HOSTS = 4
ROUNDS = 12


def test_concurrent_ingest_on_sqlite_stores_every_report(tmp_path: Path) -> None:
    options = SweepOptions(tests=(TestName.CE_WRITE, TestName.LATENCY))
    reports = [build_report(SimulatedFabric("h200x2", seed=i, hostname=f"node-{i % HOSTS}"),
                            options=options).model_dump_json() for i in range(HOSTS * ROUNDS)]
    settings = server_settings(tmp_path).model_copy(update={"ingest_wait_s": SETTLE_S})
    with live_server(settings) as server:
        def post(body: str) -> int:
            r = httpx.post(f"{server.url}/api/v1/reports", content=body, timeout=3 * SETTLE_S,
                           headers={"Authorization": f"Bearer {TOKEN}",
                                    "Content-Type": "application/json"})
            return r.status_code

        codes = [post(reports[0])]  # the gate learns how long a slot is held
        with ThreadPoolExecutor(max_workers=16) as pool:
            codes += list(pool.map(post, reports[1:]))
    assert codes == [201] * len(reports)
    assert len(stored(settings).report_ids) == len(reports)
