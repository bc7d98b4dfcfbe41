"""Migration 0014 makes every stored host name lowercase, on SQLite and
PostgreSQL: hosts, alerts (host, label, fingerprint), maintenance windows, job snapshots
and silences' host matchers; and it refuses, changing nothing, when two stored hosts differ
only in case, naming them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import insert, select
from sqlalchemy.engine import Engine

from peerwatch.app.analysis.fingerprint import fingerprint
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import alembic_config, current_revision, make_engine
from peerwatch.app.store.tables.alerts import Alert, MaintenanceWindow, Silence
from peerwatch.app.store.tables.inventory import Host
from tests.app.store.test_migration_nvlink_domains import empty_database, stored_table

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
LABELS = {"alertname": "NVLinkDown", "host": "RTE-Case-X", "gpu": "0", "link": "1"}


def _at_0011_with(engine: Engine, names: list[str]) -> None:
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0011")
        conn.execute(insert(stored_table(conn, Host.__tablename__)), [
            {"id": i + 1, "name": n, "fabric": "nvml", "first_seen": NOW}
            for i, n in enumerate(names)])
        conn.execute(insert(stored_table(conn, Alert.__tablename__)), [{
            "rule": "NVLinkDown", "fingerprint": fingerprint(LABELS), "host": "RTE-Case-X",
            "labels": LABELS, "annotations": {}, "state": "firing", "active_since": NOW,
            "updated_at": NOW}])
        conn.execute(insert(stored_table(conn, MaintenanceWindow.__tablename__)), [{
            "host": "RTE-Case-X", "starts_at": NOW, "ends_at": NOW + timedelta(hours=1),
            "created_by": "a", "comment": "", "created_at": NOW}])
        conn.execute(insert(stored_table(conn, Silence.__tablename__)), [{
            "matchers": [{"name": "host", "value": "RTE-Case-X", "is_regex": False,
                          "is_equal": True},
                         {"name": "alertname", "value": "NV.*", "is_regex": True,
                          "is_equal": True}],
            "created_by": "a", "comment": "", "starts_at": NOW,
            "ends_at": NOW + timedelta(hours=1), "created_at": NOW}])


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_names_become_lowercase_everywhere(backend: str, tmp_path: Path) -> None:
    with empty_database(backend, tmp_path) as url:
        engine = make_engine(Settings(database_url=url))
        try:
            _at_0011_with(engine, ["RTE-Case-X", "other"])
            with engine.begin() as conn:
                command.upgrade(alembic_config(conn), "head")
            with engine.connect() as conn:
                hosts = sorted(conn.scalars(select(Host.name)))
                alert: Any = conn.execute(select(Alert.host, Alert.labels,
                                                 Alert.fingerprint)).one()
                window = conn.scalar(select(MaintenanceWindow.host))
                matchers = conn.scalar(select(Silence.matchers))
        finally:
            engine.dispose()
    assert hosts == ["other", "rte-case-x"]
    lowered = {**LABELS, "host": "rte-case-x"}
    assert alert.host == "rte-case-x" and alert.labels == lowered
    assert alert.fingerprint == fingerprint(lowered)  # the engine finds the same alert
    assert window == "rte-case-x"
    assert matchers[0]["value"] == "rte-case-x" and matchers[1]["value"] == "NV.*"


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_case_duplicates_are_refused_by_name(backend: str, tmp_path: Path) -> None:
    with empty_database(backend, tmp_path) as url:
        engine = make_engine(Settings(database_url=url))
        try:
            _at_0011_with(engine, ["rte-case-x", "RTE-Case-X", "ok"])
            with pytest.raises(Exception, match="differ only in case") as refused:
                with engine.begin() as conn:
                    command.upgrade(alembic_config(conn), "head")
            assert "'RTE-Case-X' and 'rte-case-x'" in str(refused.value)
            assert "UPDATE hosts SET name = 'rte-case-x-old' WHERE name = 'RTE-Case-X'" in \
                str(refused.value)
            with engine.connect() as conn:
                assert sorted(conn.scalars(select(Host.name))) == ["RTE-Case-X", "ok",
                                                                   "rte-case-x"]
            assert current_revision(engine) == "0011"
            with engine.begin() as conn:  # the operator renames one, then it goes through
                conn.exec_driver_sql(
                    "UPDATE hosts SET name = 'rte-case-x-old' WHERE name = 'RTE-Case-X'")
                command.upgrade(alembic_config(conn), "head")
            assert current_revision(engine) != "0011"
        finally:
            engine.dispose()
