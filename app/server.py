"""The server process's app: the schema checked, the once-only background jobs scheduled.

`prepare_database(settings)` creates the schema in an empty database and refuses one left
behind by an older version (run `peerwatch migrate`), so a replica never serves with a
schema its code does not match. `build_server_app(settings)` is the app `peerwatch serve`
runs; other commands (e.g. a demo with an in-process probe) reuse it and add their own
background jobs to `app.state.background_jobs`.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import current_revision, head_revision, make_engine, upgrade_to_head
from peerwatch.app.store.retention import run_maintenance

log = logging.getLogger("peerwatch.serve")


class SchemaBehind(RuntimeError):
    """The database has an older schema than this code; `peerwatch migrate` fixes it."""


def prepare_database(settings: Settings) -> str | None:
    """Create the schema in an empty database; raise SchemaBehind for an outdated one."""
    engine = make_engine(settings)
    try:
        revision = current_revision(engine)
        if revision is None:
            upgrade_to_head(engine)
            return current_revision(engine)
        head = head_revision()
        if revision != head:
            raise SchemaBehind(f"the database is at schema revision {revision}, this version "
                               f"needs {head}: run `peerwatch migrate` first")
        return revision
    finally:
        engine.dispose()


async def maintenance_loop(app: FastAPI) -> None:
    """Run the rollup/prune/partition job now and then every `maintenance_interval_s` in the
    leading replica; a failing run is logged and retried at the next interval, never fatal
    to the server."""
    settings: Settings = app.state.settings
    while True:
        try:
            if await run_in_threadpool(app.state.leadership.held):
                result = await run_in_threadpool(run_maintenance, app.state.engine, settings)
                log.info("maintenance: %s", result)
        except Exception:  # noqa: BLE001 - the server must keep serving
            log.exception("maintenance run failed; retrying in %.0f s",
                          settings.maintenance_interval_s)
        await asyncio.sleep(settings.maintenance_interval_s)


# The event loop shares the GIL with the ingest and judge threads: at CPython's default 5 ms
# switch interval a loop thread waits up to 5 ms per GIL hand-over behind each busy thread,
# so /healthz and refusals were slow under load; 1 ms keeps the loop answering.
SWITCH_INTERVAL_S = 0.001


def build_server_app(settings: Settings) -> FastAPI:
    """The app `serve` runs: schema checked, maintenance scheduled, the judge process
    started with it (`app/judging/process.py`)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    prepare_database(settings)
    app = create_app(settings, judge_in_process=False)  # judging in its own process
    app.state.background_jobs.append(maintenance_loop)
    return app
