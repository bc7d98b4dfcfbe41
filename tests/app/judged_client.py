"""The server tests' client: a POST of a report returns once its host is judged.

Ingest answers before it judges (the judge queue, `app/judging/queue.py`, judges
after), so a test that reads a verdict right after posting would race the queue. Every test
client here waits, after each accepted report, until the app's judge queue is empty and idle
— a condition with a generous limit, never a fixed sleep — so tests read what the server
judged, and a queue that never drains fails the test by name.
"""

from __future__ import annotations

from typing import Any

import httpx
from fastapi.testclient import TestClient

from peerwatch.app.judging.queue import judge_queue_for

REPORTS_PATH = "/api/v1/reports"
JUDGED_WITHIN_S = 120.0


def wait_judged(app: Any, within_s: float = JUDGED_WITHIN_S) -> None:
    """Return once the app's judge queue has nothing waiting or running; fail if it never does."""
    if not judge_queue_for(app).drain(within_s):
        raise AssertionError(f"the judge queue did not drain within {within_s:g} s")


class JudgedClient(TestClient):
    """`TestClient` whose accepted report posts return after the judgement they caused."""

    def request(self, method: str, url: httpx._types.URLTypes,  # type: ignore[override]
                *args: Any, **kwargs: Any) -> httpx.Response:
        response = super().request(method, url, *args, **kwargs)
        if (method.upper() == "POST" and httpx.URL(str(url)).path.rstrip("/") == REPORTS_PATH
                and response.status_code in (200, 201)):
            wait_judged(self.app)
        return response
