"""Migration 0009 gives GPUs already stored their NVLink domain from their `switch_fabric`,
on SQLite and PostgreSQL: a cluster UUID however written becomes 32 lower-case hex digits;
an all-zero one, none, or no fabric at all stays without a domain."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Connection, MetaData, Table, insert, select

from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import alembic_config, make_engine
from peerwatch.app.store.tables.inventory import Gpu
from tests.app.conftest import throwaway_pg_database

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
RACK = "5c3c1c9b2f7e5a41a1d0b6c7e8f90123"
FABRICS: list[dict[str, Any] | None] = [
    {"state": "completed", "cluster_uuid": RACK},
    {"state": "completed", "cluster_uuid": "5C3C1C9B-2F7E-5A41-A1D0-B6C7E8F90123"},
    {"state": "completed", "cluster_uuid": "00000000-0000-0000-0000-000000000000"},
    {"state": "completed", "cluster_uuid": None},
    None,
]


def stored_table(conn: Connection, name: str) -> Table:
    """`name` as the database holds it at its current revision: a test that writes rows before
    upgrading must not insert the model's newer columns (their Python-side defaults too)."""
    return Table(name, MetaData(), autoload_with=conn)


@contextmanager
def empty_database(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'old.db'}"
    else:
        with throwaway_pg_database("peerwatch_mig") as url:
            yield url


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_stored_gpus_get_their_domain(backend: str, tmp_path: Path) -> None:
    with empty_database(backend, tmp_path) as url:
        engine = make_engine(Settings(database_url=url))
        try:
            with engine.begin() as conn:
                command.upgrade(alembic_config(conn), "0007")
                conn.execute(insert(stored_table(conn, "hosts")), [{
                    "id": 1, "name": "tray01", "fabric": "nvml", "first_seen": NOW}])
                conn.execute(insert(stored_table(conn, "gpus")), [{
                    "host_id": 1, "index": i, "uuid": f"GPU-{i}", "name": "GB200",
                    "pci_bus_id": f"0:{i}", "memory_total_bytes": 1, "nvlink_count": 18,
                    "pcie": {}, "rdma": {}, "switch_fabric": fabric, "present": True,
                    "last_seen_at": NOW} for i, fabric in enumerate(FABRICS)])
            with engine.begin() as conn:
                command.upgrade(alembic_config(conn), "head")
            with engine.connect() as conn:
                found = conn.execute(select(Gpu.index, Gpu.nvlink_domain)
                                     .order_by(Gpu.index)).all()
        finally:
            engine.dispose()
    assert [d for _, d in found] == [RACK, RACK, None, None, None]
