"""A real HTTP server of the standard library on a loopback port, in a thread, for the tests
that stand in for another party (a Kubernetes API, a busy server, a hostile one)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer


@contextmanager
def running(server: ThreadingHTTPServer) -> Iterator[str]:
    """`server` answering until the block ends; its base URL."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)
