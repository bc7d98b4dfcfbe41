"""The fleet of simulated hosts the fleet-peer tests ingest, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.config import Settings
from app.db import make_engine, make_sessionmaker
from tests.app.fleet.peerfleet import PeerFleet


@pytest.fixture
def fleet(settings: Settings) -> Iterator[PeerFleet]:
    engine = make_engine(settings)
    try:
        yield PeerFleet(make_sessionmaker(engine), settings)
    finally:
        engine.dispose()
