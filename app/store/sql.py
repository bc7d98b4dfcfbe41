"""SQL that must read the same on SQLite and PostgreSQL.

`epoch_seconds(col)` is a timestamp as whole seconds since 1970 (UTC), the one thing time
bucketing needs: `epoch_seconds(col) / step` is integer division on both databases, so a
GROUP BY on it gives aligned buckets without any dialect-specific date function in queries.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement


class epoch_seconds(FunctionElement[int]):  # noqa: N801 - reads like the SQL function it is
    type = BigInteger()
    inherit_cache = True
    name = "epoch_seconds"


@compiles(epoch_seconds, "sqlite")
def _epoch_sqlite(element: epoch_seconds, compiler: Any, **kw: Any) -> str:
    # UtcDateTime stores naive UTC text on SQLite; strftime('%s') reads it as UTC.
    return f"CAST(strftime('%s', {compiler.process(element.clauses, **kw)}) AS INTEGER)"


@compiles(epoch_seconds, "postgresql")
def _epoch_postgresql(element: epoch_seconds, compiler: Any, **kw: Any) -> str:
    return f"CAST(FLOOR(EXTRACT(EPOCH FROM {compiler.process(element.clauses, **kw)})) AS BIGINT)"


class from_epoch_seconds(FunctionElement[Any]):  # noqa: N801
    """The inverse: whole seconds since 1970 as a timestamp, stored the way UtcDateTime
    stores it (SQLite: naive UTC text with microseconds, so text comparisons still order)."""

    inherit_cache = True
    name = "from_epoch_seconds"


@compiles(from_epoch_seconds, "sqlite")
def _from_epoch_sqlite(element: from_epoch_seconds, compiler: Any, **kw: Any) -> str:
    arg = compiler.process(element.clauses, **kw)
    return f"strftime('%Y-%m-%d %H:%M:%S.000000', {arg}, 'unixepoch')"


@compiles(from_epoch_seconds, "postgresql")
def _from_epoch_postgresql(element: from_epoch_seconds, compiler: Any, **kw: Any) -> str:
    return f"to_timestamp({compiler.process(element.clauses, **kw)})"
