"""PostgreSQL: range-partition measurements, link_samples and gpu_samples by day.

Converts a populated database in place, one table at a time: the table is renamed aside,
a partitioned table LIKE it takes its name (and its id sequence), day partitions from its
oldest row (at most 60 days back; older rows go to the default partition and the next
maintenance run prunes them) to a few days ahead are made, the rows are moved, the old
table is dropped, and the primary key (now `(id, <time>)`: a partitioned table's keys must
include the partition column), indexes and foreign keys are made again as they were. The
indexes and keys are read from the live table, so they come back exactly. SQLite: nothing.
See app/store/partitions.py.

Revision ID: 0007
Revises: 0006
"""
from datetime import UTC, datetime, timedelta
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

from peerwatch.app.store import partitions

revision: str = '0007'
down_revision: Union[str, Sequence[str], None] = '0006'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

MAX_BACK_DAYS = 60


def _swap_in(conn: sa.Connection, table: str, partition_by: str | None) -> tuple[list, list]:
    """Rename `table` aside and create its replacement LIKE it; (indexes, foreign keys)."""
    insp = sa.inspect(conn)
    indexes, fks = insp.get_indexes(table), insp.get_foreign_keys(table)
    old = f"{table}_old"
    conn.exec_driver_sql(f"ALTER TABLE {table} RENAME TO {old}")
    conn.exec_driver_sql(f"ALTER TABLE {old} RENAME CONSTRAINT pk_{table} TO pk_{old}")
    for ix in indexes:
        conn.exec_driver_sql(f"DROP INDEX {ix['name']}")
    by = f" PARTITION BY RANGE ({partition_by})" if partition_by else ""
    conn.exec_driver_sql(f"CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS){by}")
    conn.exec_driver_sql(f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}.id")
    return indexes, fks


def _move_and_key(conn: sa.Connection, table: str, key: list[str], indexes: list,
                  fks: list) -> None:
    conn.exec_driver_sql(f"INSERT INTO {table} SELECT * FROM {table}_old")
    conn.exec_driver_sql(f"DROP TABLE {table}_old")
    conn.exec_driver_sql(f"ALTER TABLE {table} ADD CONSTRAINT pk_{table} "
                         f"PRIMARY KEY ({', '.join(key)})")
    for ix in indexes:
        conn.exec_driver_sql(f"CREATE INDEX {ix['name']} ON {table} "
                             f"({', '.join(ix['column_names'])})")
    for fk in fks:
        on_delete = fk["options"].get("ondelete")
        conn.exec_driver_sql(
            f"ALTER TABLE {table} ADD CONSTRAINT {fk['name']} FOREIGN KEY "
            f"({', '.join(fk['constrained_columns'])}) REFERENCES {fk['referred_table']} "
            f"({', '.join(fk['referred_columns'])})"
            + (f" ON DELETE {on_delete}" if on_delete else ""))


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    today = partitions.today(datetime.now(UTC))
    for table, column in partitions.PARTITIONED.items():
        indexes, fks = _swap_in(conn, table, column)
        partitions.create_default(conn, table)
        oldest = conn.exec_driver_sql(f"SELECT min({column}) FROM {table}_old").scalar()
        first = max(partitions.today(oldest) if oldest else today,
                    today - timedelta(days=MAX_BACK_DAYS))
        partitions.ensure_table_days(conn, table, min(first, today),
                                     today + timedelta(days=partitions.AHEAD_DAYS))
        _move_and_key(conn, table, ["id", column], indexes, fks)


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    for table in partitions.PARTITIONED:
        indexes, fks = _swap_in(conn, table, None)
        _move_and_key(conn, table, ["id"], indexes, fks)
