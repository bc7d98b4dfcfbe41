"""`peerwatch serve` as a real subprocess for tests: started, waited for, stopped."""

from __future__ import annotations

import subprocess
import time

import httpx
import pytest

from tests.conftest import SETTLE_S


def wait_healthy(base: str, proc: subprocess.Popen[str] | subprocess.Popen[bytes],
                 within_s: float = SETTLE_S) -> None:
    """Return once `base/healthz` answers 200; fail the test if the process exits first."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.communicate()[0]
            text = out.decode() if isinstance(out, bytes) else out
            pytest.fail(f"server exited: {(text or '')[-3000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    pytest.fail(f"server did not come up in {within_s:g} s")
