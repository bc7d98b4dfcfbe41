"""Fixtures of the deployment tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.deploy.hostile_server import Hostile, hostile_server


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    """A hostile peerwatch on loopback (tests/deploy/hostile_server.py)."""
    with hostile_server() as state:
        yield state
