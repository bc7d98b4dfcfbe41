"""A host's measurement keys (migration 0036): a measurement row names its (test, pair, GPU
set) by a key's id, made the first time the host reports it.

A key is never changed or reused (its id comes from a sequence; it goes only with its
host), so an id read once names the same key for good."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import ARRAY, ColumnElement, Integer, any_, bindparam, cast, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from peerwatch.app.store.tables.history import Measurement, MeasurementKey, key_ident

# (test, src, dst, GPU set as `gpus_text` gives it)
KeyParts = tuple[str, int | None, int | None, str]


def host_key_ids(session: Session, host_id: int) -> dict[str, int]:
    """ident -> id of every key the host has."""
    return {ident: pk for ident, pk in session.execute(_IDENTS, {"host": host_id})}


_IDENTS = select(MeasurementKey.ident, MeasurementKey.id).where(
    MeasurementKey.host_id == bindparam("host"))  # built once: every sweep reads it


def key_ids(session: Session, host_id: int, wanted: Iterable[KeyParts]) -> dict[str, int]:
    """ident -> id for the host's keys, every one of `wanted` among them: those it lacks
    are inserted first. A key another writer inserted at the same moment is kept (the
    unique (host_id, ident) turns the second insert into nothing) and read back."""
    have = host_key_ids(session, host_id)
    missing = {key_ident(*parts): parts for parts in wanted}
    for ident in have.keys() & missing.keys():
        del missing[ident]
    if not missing:
        return have
    rows = [{"host_id": host_id, "test": test, "src": src, "dst": dst, "gpus": gpus,
             "ident": ident} for ident, (test, src, dst, gpus) in missing.items()]
    dialect = session.get_bind().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    session.execute(insert(MeasurementKey).on_conflict_do_nothing(), rows)
    return host_key_ids(session, host_id)


def pair_key_id(session: Session, host_id: int, src: int, dst: int, test: str) -> int | None:
    """The id of the host's (src, dst, test) key, None when it has never reported it."""
    return session.scalar(select(MeasurementKey.id).where(
        MeasurementKey.host_id == host_id, MeasurementKey.ident == key_ident(test, src, dst, "")))


def pair_keys(session: Session, host_id: int,
              test: str | None = None) -> dict[int, tuple[int, int, str]]:
    """id -> (src, dst, test) of the host's pair and per-GPU keys (`test`'s only, if
    given). A reader asks for their rows by these ids, through the key_id index: joined
    by the host instead, a planner may hash every host's rows of the time range."""
    query = select(MeasurementKey.id, MeasurementKey.src, MeasurementKey.dst,
                   MeasurementKey.test).where(MeasurementKey.host_id == host_id,
                                              MeasurementKey.src.is_not(None))
    if test is not None:
        query = query.where(MeasurementKey.test == test)
    return {pk: (src, dst, name) for pk, src, dst, name in session.execute(query)
            if src is not None and dst is not None}  # a pair key has both


def of_keys(session: Session, ids: Iterable[int]) -> ColumnElement[bool]:
    """`measurements.key_id IN ids`, said so that PostgreSQL's planner reads the key_id
    index whatever a partition's statistics say. A day partition has none until it is
    analyzed (autovacuum's analyze, or none where autovacuum is off); the planner then
    takes each listed id for 0.5 % of the rows, so a host's 416 ids look like the whole
    partition and it scans it: 108 ms against 0.8 ms for one host's 1,248 rows among
    1.25 M, and a scan that finds nothing (`_nothing_between`, every new host's) reads
    the window whole. Given as `= ANY` of an array it cannot see into (an InitPlan), it
    counts a few values and takes the index, as it does with statistics. SQLite: IN."""
    wanted = sorted(ids)
    if session.get_bind().dialect.name != "postgresql":
        return Measurement.key_id.in_(wanted)
    unseen = select(bindparam("key_ids", wanted, ARRAY(Integer), unique=True))
    # the CAST makes it one array value: `= ANY (SELECT ...)` alone would compare each row
    return Measurement.key_id == any_(cast(unseen.scalar_subquery(), ARRAY(Integer)))
