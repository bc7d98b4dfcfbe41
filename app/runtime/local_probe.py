"""The in-process probe of `peerwatch serve`: on a GPU host, the server watches itself.

`attach_local_probe(app, host, port)` adds a background job to the app (see
`app.state.background_jobs` in `app.main`). When the server starts, the job tries the real
fabric (NVML + CuPy); without GPUs it logs one line and ends, and the server just serves.
With GPUs it is issued a probe credential for the host the fabric names (the server's own
secret, `app/runtime/keyring.py`), waits until the server listens, and
runs the ordinary probe worker in a thread, posting over loopback HTTP like any other probe
(same validation, same idempotent ingest, same spool: `<data_dir>/local-probe-spool`). On
shutdown the worker is stopped and joined; what it had not delivered is in its spool.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Callable

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.credentials import Role, issue
from peerwatch.app.runtime.keyring import ensure_keys, secret_path
from peerwatch.probes.agent.runner import open_runtime
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.errors import FabricUnavailable
from peerwatch.probes.fabric import Fabric
from peerwatch.probes.fabric_select import open_real

log = logging.getLogger("peerwatch.local_probe")
LISTEN_WAIT_S = 30.0
FabricOpener = Callable[[], Fabric]


def loopback_for(bind_host: str) -> str:
    """Where this process reaches its own server: loopback when bound to every address."""
    return "127.0.0.1" if bind_host in ("0.0.0.0", "", "::") else bind_host


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def attach_local_probe(app: FastAPI, host: str, port: int,
                       open_fabric: FabricOpener = open_real,
                       probe_settings: ProbeSettings | None = None) -> None:
    """Register the local probe. Call before serving."""
    settings: Settings = app.state.settings
    base = probe_settings or ProbeSettings()
    probe = base.model_copy(update={
        "server_url": f"http://{loopback_for(host)}:{port}",
        "spool_dir": settings.data_dir / "local-probe-spool"})

    async def local_probe(_app: FastAPI) -> None:
        try:
            fabric = await run_in_threadpool(open_fabric)
        except FabricUnavailable as exc:
            log.info("no local GPUs to probe (%s); serving only", exc)
            return
        stop = threading.Event()
        speaks_as = probe.hostname or fabric.host().hostname
        keys = ensure_keys(secret_path(settings.data_dir, settings.secret_file))
        credential = issue(keys, Role.PROBE, speaks_as)
        thread = threading.Thread(target=_run, daemon=True,
                                  args=(fabric, probe.model_copy(update={"token": credential}),
                                        stop),
                                  name="peerwatch-local-probe")
        try:
            await _wait_listening(loopback_for(host), port)
            thread.start()
            log.info("probing this host's %d GPUs in-process (%s)", fabric.gpu_count(),
                     fabric.name)
            await asyncio.Event().wait()  # until the server shuts down (cancelled)
        finally:
            stop.set()
            if thread.is_alive():
                await run_in_threadpool(thread.join, probe.request_timeout_s + 5)

    app.state.background_jobs.append(local_probe)


async def _wait_listening(host: str, port: int) -> None:
    deadline = time.monotonic() + LISTEN_WAIT_S
    while not await run_in_threadpool(_listening, host, port):
        if time.monotonic() > deadline:
            log.warning("server not listening on %s:%d after %.0f s; probing anyway",
                        host, port, LISTEN_WAIT_S)
            return
        await asyncio.sleep(0.1)


def _run(fabric: Fabric, settings: ProbeSettings, stop: threading.Event) -> None:
    try:
        with open_runtime(settings, fabric=fabric, stop=stop) as runtime:
            runtime.worker.run()
    except Exception:  # noqa: BLE001 - the server keeps serving without its local probe
        log.exception("the local probe stopped with an error")
    finally:
        fabric.close()
