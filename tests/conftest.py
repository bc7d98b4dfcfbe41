"""Shared test helpers.

Real parts (PostgreSQL, Chromium, promtool, Alertmanager) are used for real. Where one is
missing, a developer's run skips those tests, but CI (`PEERWATCH_REQUIRE_SERVICES=1`, set by
`.ci/run`) fails instead, so a green CI always means the real part was exercised.
"""

from __future__ import annotations

import os

import pytest

REQUIRE_SERVICES = os.environ.get("PEERWATCH_REQUIRE_SERVICES") == "1"


def require(available: bool, what: str) -> None:
    """Skip (developer) or fail (CI) when a real part the test needs is missing."""
    if available:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"{what} is required in CI but is not available", pytrace=False)
    pytest.skip(f"{what} is not available")
