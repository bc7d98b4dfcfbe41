"""Run the FastAPI app under uvicorn in a background thread, and stop it cleanly.

The demo serves while its fleet and backfill run in other threads of the same process;
tests use the same class to put a real server on a loopback port. Signals stay with the
main thread (uvicorn installs no handlers outside it), so the caller decides how to stop.
Connections are bounded as under `serve` (app/api/http_guard.py).
"""

from __future__ import annotations

import threading
import time

import uvicorn
from fastapi import FastAPI

from peerwatch.app.api.http_guard import guarded_protocol
from peerwatch.app.api.http_limits import HttpLimits


class ServerThread:
    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0,
                 log_level: str = "warning", keep_alive_s: int = 75) -> None:
        # Keep-alive longer than any probe interval, so a probe's pooled connection is not
        # closed by the server just as the probe reuses it.
        config = uvicorn.Config(app, host=host, port=port, log_level=log_level,
                                lifespan="on", access_log=False,
                                timeout_keep_alive=keep_alive_s, ws="none",
                                http=guarded_protocol(HttpLimits.from_settings(
                                    app.state.settings)))
        self.server = uvicorn.Server(config)
        self.host = host
        self._thread = threading.Thread(target=self.server.run, name="peerwatch-server",
                                        daemon=True)

    def start(self, timeout_s: float = 120.0) -> ServerThread:
        """Start serving; returns once the socket listens (RuntimeError if it never does:
        the limit is generous, a loaded machine can take a while to run the lifespan)."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"the server did not start on {self.host} (port in use?)")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server did not start within {timeout_s:g} s")
            time.sleep(0.02)
        return self

    @property
    def port(self) -> int:
        sockets = self.server.servers[0].sockets
        return int(sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self, timeout_s: float = 10.0) -> None:
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
