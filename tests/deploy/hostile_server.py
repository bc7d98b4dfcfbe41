"""A hostile peerwatch for the Slurm scripts' tests: a real `http.server` on loopback that
answers each GET with whatever the test set (what a compromised or impersonated server could
say), and records what it was asked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.threaded_server import running


@dataclass
class Hostile:
    url: str
    body: bytes = b"{}"
    status: int = 200
    asked: list[str] = field(default_factory=list)

    def answer(self, value: Any, status: int = 200) -> None:
        self.body = value if isinstance(value, bytes) else json.dumps(value).encode()
        self.status = status


@contextmanager
def hostile_server() -> Iterator[Hostile]:
    """The server, running on a free loopback port until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    with running(server) as url:
        state = Hostile(url=url)
        server.state = state  # type: ignore[attr-defined]
        yield state


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        state: Hostile = self.server.state  # type: ignore[attr-defined]
        state.asked.append(self.path)
        self.send_response(state.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(state.body)))
        self.end_headers()
        self.wfile.write(state.body)

    def log_message(self, *_args: Any) -> None:
        pass
