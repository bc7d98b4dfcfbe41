"""The SQL statements an engine sends while a block runs, as the tests that count them see
them (a SQLAlchemy cursor event; COPY goes around it, on PostgreSQL's raw connection)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, event


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """The statements sent through `engine` inside the block, in order, as sent."""
    seen: list[str] = []

    def hook(conn: object, cursor: object, statement: str, *_: object) -> None:
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", hook)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", hook)
