"""The `judged_*` tables: every verdict, stored once when judged, read by everyone."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    LargeBinary,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from peerwatch.app.store.base import Base


class _Judged:
    verdict: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)
    since: Mapped[datetime]
    judged_at: Mapped[datetime]
    facts: Mapped[dict[str, Any]] = mapped_column(doc="The numbers behind the verdict.")


class JudgedHost(_Judged, Base):
    __tablename__ = "judged_hosts"

    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"),
                                         primary_key=True)
    stale: Mapped[bool] = mapped_column(Boolean)
    gpus_total: Mapped[int]
    gpus_healthy: Mapped[int]
    worst_src: Mapped[int | None]
    worst_dst: Mapped[int | None]
    worst_test: Mapped[str | None] = mapped_column(String(16))
    worst_ratio: Mapped[float | None] = mapped_column(Float)


class JudgedGpu(_Judged, Base):
    __tablename__ = "judged_gpus"

    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"),
                                         primary_key=True)
    gpu: Mapped[int] = mapped_column(primary_key=True)


class JudgedLink(_Judged, Base):
    __tablename__ = "judged_links"

    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"),
                                         primary_key=True)
    gpu: Mapped[int] = mapped_column(primary_key=True)
    link: Mapped[int] = mapped_column(primary_key=True)


class JudgedPair(_Judged, Base):
    __tablename__ = "judged_pairs"

    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"),
                                         primary_key=True)
    src: Mapped[int] = mapped_column(primary_key=True)
    dst: Mapped[int] = mapped_column(primary_key=True)


class JudgedTest(_Judged, Base):
    """One (pair, test): its verdict and the figures the matrix, topology and rules show."""

    __tablename__ = "judged_tests"

    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"),
                                         primary_key=True)
    test: Mapped[str] = mapped_column(String(16), primary_key=True)
    src: Mapped[int] = mapped_column(primary_key=True)
    dst: Mapped[int] = mapped_column(primary_key=True)
    value: Mapped[float | None] = mapped_column(Float, doc="Newest judged (uncontended) value.")
    value_at: Mapped[datetime | None] = mapped_column(doc="When `value` was measured.")
    ratio_expected: Mapped[float | None] = mapped_column(Float)
    ratio_baseline: Mapped[float | None] = mapped_column(Float)
    low_since: Mapped[datetime | None]
    expected: Mapped[float | None] = mapped_column(Float)
    expected_basis: Mapped[str | None] = mapped_column(Text)
    baseline: Mapped[float | None] = mapped_column(Float)
    latest_at: Mapped[datetime | None] = mapped_column(doc="Newest sample of any kind.")
    latest_value: Mapped[float | None] = mapped_column(Float)
    latest_contended: Mapped[bool] = mapped_column(Boolean)
    latest_foreign_bytes: Mapped[int] = mapped_column(BigInteger)
    latest_error: Mapped[str | None] = mapped_column(Text)
    state: Mapped[bytes | None] = mapped_column(
        LargeBinary, doc="What the next judgement goes on from (app/judging/running.py): the "
        "running baseline, the newest samples, packed (app/store/packed.py); null: seeded "
        "from history at the next sweep.")
