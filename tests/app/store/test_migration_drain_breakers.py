"""Migration 0025 gives every scheduler peerwatch drain already acted on a closed breaker
row, on SQLite and PostgreSQL: its drain state is known (an upgraded server must not fail
closed), while a scheduler it never acted on has none and an existing row is kept."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import insert, select

from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import alembic_config, make_engine
from peerwatch.app.store.tables.drain import DrainBreaker
from tests.app.store.test_migration_nvlink_domains import empty_database, stored_table

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _action(scheduler: str) -> dict:
    return {"at": NOW, "host": "gpu-b", "scheduler": scheduler, "kind": "take_out",
            "mode": "act", "reason": "GPU5 down", "actor": "drain@head", "details": {}}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_schedulers_acted_on_get_a_closed_breaker(backend: str, tmp_path: Path) -> None:
    with empty_database(backend, tmp_path) as url:
        engine = make_engine(Settings(database_url=url))
        try:
            with engine.begin() as conn:
                command.upgrade(alembic_config(conn), "0024")
                conn.execute(insert(stored_table(conn, "drain_actions")),
                             [_action("slurm"), _action("slurm"), _action("kubernetes")])
                conn.execute(insert(stored_table(conn, "drain_breakers")), [{
                    "scheduler": "kubernetes", "open": True, "mode": "act",
                    "opened_at": NOW, "reason": "limit"}])
            with engine.begin() as conn:
                command.upgrade(alembic_config(conn), "head")
            with engine.connect() as conn:
                rows = conn.execute(select(DrainBreaker.scheduler, DrainBreaker.open,
                                           DrainBreaker.reason)
                                    .order_by(DrainBreaker.scheduler)).all()
        finally:
            engine.dispose()
    assert [tuple(r) for r in rows] == [("kubernetes", True, "limit"), ("slurm", False, "")]
