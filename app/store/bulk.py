"""Insert many rows of one table in the session's transaction, as fast as the driver allows.

A sweep report is ~700 rows (measurements, link and GPU samples). Through the ORM's
executemany each value passes SQLAlchemy's per-parameter machinery and PostgreSQL gets
batched INSERTs; here PostgreSQL gets one `COPY ... FROM STDIN` (psycopg 3
`cursor.copy`) and SQLite one prepared INSERT run by the driver's `executemany`. Values go
through each column type's own bind processor first (UTC datetimes), JSON as orjson's
compact text, so what is stored reads back exactly as an ORM insert's. It runs on the
session's connection: a failure later in the ingest rolls these rows back with the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, cast

import orjson
from sqlalchemy import JSON, Table
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session

from peerwatch.app.store.base import Base

if TYPE_CHECKING:  # the type only: the driver loads when a PostgreSQL engine connects
    import psycopg


def _json_text(value: Any) -> str:
    """orjson's compact text; a dict's int keys as text, as the stdlib writes them (a
    judged row's facts)."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _processors(table: Table, columns: Sequence[str],
                dialect: Dialect) -> list[Callable[[Any], Any] | None]:
    """Each column's bind processor; JSON columns get their text from orjson (the same
    document, compact), which both drivers store as it is."""
    return [_json_text if isinstance(table.c[name].type, JSON)
            else table.c[name].type._cached_bind_processor(dialect) for name in columns]


def _memoised(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`fn` for a column of few distinct hashable values (a sample's time, in every row)."""
    seen: dict[Any, Any] = {}

    def processed(value: Any) -> Any:
        try:
            return seen[value]
        except KeyError:
            seen[value] = result = fn(value)
            return result
        except TypeError:  # unhashable
            return fn(value)
    return processed


def _values(rows: Sequence[dict[str, Any]], columns: Sequence[str],
            processors: list[Callable[[Any], Any] | None]) -> list[tuple[Any, ...]]:
    """Each row as a tuple in `columns`' order, processed where a column has a processor:
    one C-level itemgetter per row, then only the few processed columns touched (a link
    sample row has ~20 columns, one of them a time)."""
    get = itemgetter(*columns)
    plain = [get(row) for row in rows] if len(columns) > 1 else [(row[columns[0]],)
                                                                 for row in rows]
    processed = [(i, fn if fn is _json_text else _memoised(fn))
                 for i, fn in enumerate(processors) if fn is not None]
    if not processed:
        return plain
    out = []
    for values in plain:
        row = list(values)
        for i, fn in processed:
            if row[i] is not None:
                row[i] = fn(row[i])
        out.append(tuple(row))
    return out


def insert_rows(session: Session, model: type[Base], rows: Sequence[dict[str, Any]]) -> None:
    """INSERT `rows` (dicts with the same keys, no primary key) into `model`'s table."""
    if not rows:
        return
    table = cast(Table, model.__table__)
    connection = session.connection()
    dialect = connection.dialect
    names, values = _driver_rows(dialect, table, rows)
    quoted_table = dialect.identifier_preparer.format_table(table)
    if dialect.name == "postgresql":
        raw = cast("psycopg.Connection[Any]", connection.connection.dbapi_connection)
        with raw.cursor() as cursor:
            with cursor.copy(f"COPY {quoted_table} ({names}) FROM STDIN") as copy:
                for value in values:
                    copy.write_row(value)
        return
    connection.exec_driver_sql(f"INSERT INTO {quoted_table} ({names}) VALUES "
                               f"({_marks(dialect, len(rows[0]))})", values)


def upsert_rows_sqlite(session: Session, table: Table, rows: Sequence[dict[str, Any]],
                       conflict: Sequence[str], update: Sequence[str]) -> None:
    """SQLite: INSERT `rows` (dicts with the same keys) into `table`, a row whose `conflict`
    columns are stored already updating its `update` columns instead: one prepared
    statement run by the driver's `executemany`, the values processed as `insert_rows`
    does (SQLAlchemy's own executemany processes every parameter of every row: ~9,000 for
    an 8-GPU host's judged tests)."""
    if not rows:
        return
    connection = session.connection()
    dialect = connection.dialect
    quote = dialect.identifier_preparer.quote
    names, values = _driver_rows(dialect, table, rows)
    sets = ", ".join(f"{quote(c)} = excluded.{quote(c)}" for c in update)
    connection.exec_driver_sql(
        f"INSERT INTO {dialect.identifier_preparer.format_table(table)} ({names}) VALUES "
        f"({_marks(dialect, len(rows[0]))}) ON CONFLICT "
        f"({', '.join(quote(c) for c in conflict)}) DO UPDATE SET {sets}", values)


def _driver_rows(dialect: Dialect, table: Table, rows: Sequence[dict[str, Any]]
                 ) -> tuple[str, list[tuple[Any, ...]]]:
    """(the rows' quoted column names, each row's values as the driver takes them)."""
    columns = list(rows[0])
    values = _values(rows, columns, _processors(table, columns, dialect))
    return ", ".join(dialect.identifier_preparer.quote(c) for c in columns), values


def _marks(dialect: Dialect, count: int) -> str:
    return ", ".join("?" if dialect.paramstyle == "qmark" else "%s" for _ in range(count))
