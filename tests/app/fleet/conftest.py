"""The fleet of simulated hosts the fleet-peer tests ingest, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from peerwatch.app.judging.sessions import make_sessionmaker
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from tests.app.fleet.peerfleet import PeerFleet


@pytest.fixture
def fleet(settings: Settings) -> Iterator[PeerFleet]:
    engine = make_engine(settings)
    try:
        yield PeerFleet(make_sessionmaker(engine), settings)
    finally:
        engine.dispose()
