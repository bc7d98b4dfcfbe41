"""The declarative base of every table: naming convention, UTC times, row ids."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Dialect,
    Integer,
    MetaData,
    TypeDecorator,
)
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeEngine

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


# Row ids of the big tables: 64-bit on PostgreSQL, SQLite's rowid alias (also 64-bit) there.
BigId: TypeEngine[int] = BigInteger().with_variant(Integer(), "sqlite")


class UtcDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in and out, whatever the backend stores."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: peerwatch stores aware UTC times")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return _utc(value)

    def result_processor(self, dialect: Dialect, coltype: Any) -> Callable[[Any], Any]:
        """`process_result_value` as one call per value, not the decorator's two: a
        judgement reads ~3,700 stored times of an 8-GPU host (its judged rows)."""
        impl = self.impl_instance.result_processor(dialect, coltype)
        if impl is None:
            return _utc
        return lambda value: _utc(impl(value))


def _utc(value: datetime | None) -> datetime | None:
    """A stored time as an aware UTC datetime (SQLite's come back naive)."""
    if value is None or value.tzinfo is UTC:  # PostgreSQL's, in its UTC session (app/store/db.py)
        return value
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {datetime: UtcDateTime, dict[str, Any]: JSON, list[Any]: JSON}
