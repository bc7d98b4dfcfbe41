"""Lookups every read query starts from, and the error for a name that does not exist."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.health import Sample
from peerwatch.app.records.keys import PairKey
from peerwatch.app.store import packed
from peerwatch.app.store.measurement_keys import of_keys, pair_keys
from peerwatch.app.store.tables.history import Measurement, foreign_bytes_of
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.judged import JudgedTest
from peerwatch.probes.report import TestName


class NotFound(LookupError):
    """A host, GPU, pair or test that does not exist; the API turns it into a 404."""

    def __init__(self, kind: str, name: object, where: str | None = None) -> None:
        self.kind, self.name = kind, name
        suffix = f" on host {where!r}" if where else ""
        super().__init__(f"{kind} {name!r} not found{suffix}")


def host_known(session: Session, name: str) -> bool:
    """Whether a host of this (canonical) name has ever reported."""
    return session.scalar(select(Host.id).where(Host.name == name)) is not None


def get_host(session: Session, name: str) -> Host:
    host = session.scalar(select(Host).where(Host.name == name))
    if host is None:
        raise NotFound("host", name)
    return host


def pair_samples(session: Session, host_id: int, since: datetime,
                 until: datetime | None = None,
                 test: TestName | None = None,
                 known: dict[int, tuple[int, int, str]] | None = None
                 ) -> dict[PairKey, list[Sample]]:
    """Every pair-test sample of a host in [since, until], oldest first, per (src, dst, test)."""
    keys = known if known is not None and test is None else pair_keys(
        session, host_id, None if test is None else test.value)  # `known`: its pair_keys
    out: dict[PairKey, list[Sample]] = defaultdict(list)
    if not keys:
        return out
    named = {pk: (src, dst, TestName(name)) for pk, (src, dst, name) in keys.items()}
    query = select(
        Measurement.key_id, Measurement.measured_at, Measurement.value,
        Measurement.contended, Measurement.error, Measurement.foreign_bytes,
    ).where(of_keys(session, keys), Measurement.measured_at >= since)
    if until is not None:
        query = query.where(Measurement.measured_at <= until)
    for key_id, at, value, contended, error, foreign in session.execute(
            query.order_by(Measurement.measured_at, Measurement.report_id)):
        out[named[key_id]].append(
            Sample(at=at, value=value, contended=contended, error=error,
                   foreign_bytes=foreign_bytes_of(foreign)))
    return out


@dataclass(frozen=True)
class StoredBaseline:
    value: float
    spread: float
    n: int
    updated_at: datetime


def judged_baseline(session: Session, host_id: int, key: PairKey) -> StoredBaseline | None:
    """The running baseline a (pair, test) was last judged against: (centre, spread, n) in
    its judged row's packed state (its base, app/store/packed.py)."""
    src, dst, test = key
    found = session.execute(select(JudgedTest.state, JudgedTest.judged_at).where(
        JudgedTest.host_id == host_id, JudgedTest.src == src, JudgedTest.dst == dst,
        JudgedTest.test == test.value)).first()
    if found is None:
        return None
    state, judged_at = found
    b = packed.unpack(state)[5] if state else None
    return StoredBaseline(float(b[0]), float(b[1]), int(b[2]), judged_at) if b else None
