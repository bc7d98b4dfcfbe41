"""Tables (SQLAlchemy 2 typed ORM). The schema itself is created only by `migrations/`.

Inventory tables (hosts, gpus, nvlinks, pairs) hold the latest known shape of each host and
are upserted by every report. History tables (reports, measurements, counter/gpu samples)
are append-only and pruned by age; `measurement_rollups` keeps hourly aggregates for a year.
On PostgreSQL (migration 0007) measurements, link_samples and gpu_samples are partitioned
by day and their primary keys also hold the time column (see app/services/partitions.py).
`reports.report_id` is unique: that constraint, not any in-process state, is what makes
ingest idempotent across server replicas.

Times are stored in UTC (`UtcDateTime`: timestamptz on PostgreSQL, naive-UTC text on SQLite)
and always come back timezone-aware.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    Uuid,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
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
    if value is None or value.tzinfo is UTC:  # PostgreSQL's, in its UTC session (app/db.py)
        return value
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {datetime: UtcDateTime, dict[str, Any]: JSON, list[Any]: JSON}


# --------------------------------------------------------------------------- inventory


class Host(Base):
    __tablename__ = "hosts"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(253), unique=True)
    fabric: Mapped[str] = mapped_column(String(64))
    driver_version: Mapped[str | None] = mapped_column(String(64))
    cuda_version: Mapped[str | None] = mapped_column(String(64))
    probe_version: Mapped[str | None] = mapped_column(String(64))
    first_seen: Mapped[datetime]
    last_report_at: Mapped[datetime | None]
    last_sweep_at: Mapped[datetime | None]
    # migration 0004: the server's clock, which staleness is judged by (a probe's clock may
    # be off), and how far the probe's clock was from it in the newest report.
    last_received_at: Mapped[datetime | None]
    clock_skew_s: Mapped[float | None] = mapped_column(Float)
    # ... and what lets a judgement be skipped when nothing judged has changed: when the
    # inventory last changed, and the sum of the judged error counters in the newest report.
    inventory_changed_at: Mapped[datetime | None]
    error_total: Mapped[int | None] = mapped_column(BigInteger)
    # migration 0010: when the fleet peer stats of this host's groups last changed materially
    # (set by the recompute, app/services/fleet_peers.py): a judgement made before it is stale.
    peers_changed_at: Mapped[datetime | None]
    # migration 0014: the server refused this host's reports (429/503): when it last did, and
    # how many since it last stored one (flushed in batches by app/heard.py).
    last_refused_at: Mapped[datetime | None]
    refused_reports: Mapped[int] = mapped_column(default=0, server_default="0")
    # migration 0020: when the probe's newest request arrived, whatever became of it (stored,
    # refused, or dropped when the probe timed out first): staleness counts it as heard.
    last_heard_at: Mapped[datetime | None]
    # migration 0021: when ingest last stored Xid/SXid events of this host (the server's
    # clock): a judgement made before it has not read them (app/judging/unchanged.py).
    events_stored_at: Mapped[datetime | None]


class Gpu(Base):
    __tablename__ = "gpus"
    __table_args__ = (UniqueConstraint("host_id", "index"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    index: Mapped[int]
    uuid: Mapped[str] = mapped_column(String(128))
    name: Mapped[str] = mapped_column(String(128))
    pci_bus_id: Mapped[str] = mapped_column(String(32))
    memory_total_bytes: Mapped[int] = mapped_column(BigInteger)
    cpu_affinity: Mapped[str | None] = mapped_column(String(256))
    numa_node: Mapped[int | None]
    nvlink_count: Mapped[int]
    pcie: Mapped[dict[str, Any]]
    rdma: Mapped[dict[str, Any]]
    switch_fabric: Mapped[dict[str, Any] | None]
    # migration 0009: the NVLink domain (`switch_fabric`'s cluster UUID as 32 hex digits,
    # `app.analysis.domains.domain_key`), written with the inventory so that a domain's
    # GPUs are one indexed select away (`app/queries/domains.py`).
    nvlink_domain: Mapped[str | None] = mapped_column(String(32), index=True)
    present: Mapped[bool] = mapped_column(Boolean, doc="In the host's latest inventory.")
    # written when the row changes and when the GPU goes missing (then: the last report that
    # listed it); a present GPU was seen in its host's newest report (`last_report_at`)
    last_seen_at: Mapped[datetime]


class NvLink(Base):
    __tablename__ = "nvlinks"
    __table_args__ = (UniqueConstraint("host_id", "gpu", "link"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    gpu: Mapped[int]
    link: Mapped[int]
    state: Mapped[str] = mapped_column(String(16))
    version: Mapped[str | None] = mapped_column(String(16))
    speed_bps: Mapped[float | None] = mapped_column(Float)
    remote_type: Mapped[str] = mapped_column(String(16))
    remote_pci_bus_id: Mapped[str | None] = mapped_column(String(32))
    remote_gpu: Mapped[int | None]
    capabilities: Mapped[dict[str, Any]]
    present: Mapped[bool] = mapped_column(Boolean)
    updated_at: Mapped[datetime]


class Pair(Base):
    __tablename__ = "pairs"
    __table_args__ = (UniqueConstraint("host_id", "src", "dst"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    src: Mapped[int]
    dst: Mapped[int]
    topology: Mapped[str] = mapped_column(String(8))
    pcie_path: Mapped[str] = mapped_column(String(8))
    nvlink_width: Mapped[int]
    via_nvswitch: Mapped[bool] = mapped_column(Boolean)
    p2p: Mapped[dict[str, Any]]
    can_access_peer: Mapped[bool | None] = mapped_column(Boolean)
    present: Mapped[bool] = mapped_column(Boolean)
    updated_at: Mapped[datetime]


# --------------------------------------------------------------------------- history


class ReportRow(Base):
    __tablename__ = "reports"
    __table_args__ = (Index(None, "host_id", "finished_at"), Index(None, "received_at"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    report_id: Mapped[uuid.UUID] = mapped_column(Uuid, unique=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    schema_version: Mapped[int]
    kind: Mapped[str] = mapped_column(String(16))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime]
    received_at: Mapped[datetime]
    gpu_time_s: Mapped[float] = mapped_column(Float)
    wall_time_s: Mapped[float] = mapped_column(Float)
    device_memory_bytes_max: Mapped[int] = mapped_column(BigInteger)
    agent_cpu_s: Mapped[float] = mapped_column(Float)
    agent_rss_bytes: Mapped[int] = mapped_column(BigInteger)
    dropped_reports: Mapped[int]
    skipped: Mapped[list[Any]]
    errors: Mapped[list[Any]]
    # migration 0006: SHA-256 of the report's canonical JSON, so a report_id reused for a
    # different report is a 409 rather than a silent "duplicate" (NULL: stored before 0006).
    digest: Mapped[str | None] = mapped_column(String(64))


class Measurement(Base):
    """One TransferResult. `value` is None exactly when `error` is set. A per-GPU test (h2d,
    d2h, local: `dst` null on the wire) is stored with src = dst = the GPU, as are its
    baseline, rollups and judged row: the diagonal of the pair tables."""

    __tablename__ = "measurements"
    __table_args__ = (
        Index(None, "host_id", "src", "dst", "test", "measured_at"),
        Index(None, "measured_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    report_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("reports.id", ondelete="CASCADE"), index=True
    )
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    test: Mapped[str] = mapped_column(String(16))
    src: Mapped[int | None]
    dst: Mapped[int | None]
    gpus: Mapped[list[Any]]
    value: Mapped[float | None] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(8))
    samples: Mapped[list[Any]]
    bytes_per_copy: Mapped[int] = mapped_column(BigInteger)
    copies: Mapped[int]
    gpu_time_s: Mapped[float] = mapped_column(Float)
    device_memory_bytes: Mapped[int] = mapped_column(BigInteger)
    verified: Mapped[bool] = mapped_column(Boolean)
    contended: Mapped[bool] = mapped_column(Boolean)
    foreign_bytes: Mapped[int] = mapped_column(BigInteger)
    error: Mapped[str | None] = mapped_column(Text)
    measured_at: Mapped[datetime]
    # migration 0017: the throttled GPUs it touched ("GPU3 power-capped"), or None
    throttle: Mapped[str | None] = mapped_column(String(200))


class LinkSample(Base):
    """Cumulative counters of one NVLink port at one time (judge rates, never sizes)."""

    __tablename__ = "link_samples"
    # (host_id, at): a host's newest window across all its links, what judging reads (0004)
    __table_args__ = (Index(None, "host_id", "gpu", "link", "at"), Index(None, "at"),
                      Index(None, "host_id", "at"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    report_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("reports.id", ondelete="CASCADE"), index=True
    )
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    at: Mapped[datetime]
    gpu: Mapped[int]
    link: Mapped[int]
    tx_bytes: Mapped[int | None] = mapped_column(BigInteger)
    rx_bytes: Mapped[int | None] = mapped_column(BigInteger)
    replay: Mapped[int | None] = mapped_column(BigInteger)
    recovery: Mapped[int | None] = mapped_column(BigInteger)
    crc_flit: Mapped[int | None] = mapped_column(BigInteger)
    crc_data: Mapped[int | None] = mapped_column(BigInteger)
    ecc_data: Mapped[int | None] = mapped_column(BigInteger)


class GpuSample(Base):
    """Per-GPU counters and activity at one time: PCIe replays, utilization, processes."""

    __tablename__ = "gpu_samples"
    __table_args__ = (Index(None, "host_id", "gpu", "at"), Index(None, "at"),
                      Index(None, "host_id", "at"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    report_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("reports.id", ondelete="CASCADE"), index=True
    )
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    at: Mapped[datetime]
    gpu: Mapped[int]
    pcie_replay: Mapped[int | None] = mapped_column(BigInteger)
    utilization_pct: Mapped[float | None] = mapped_column(Float)
    memory_used_bytes: Mapped[int | None] = mapped_column(BigInteger)
    compute_processes: Mapped[int | None]
    # migration 0017: clocks-event reasons (NVML's mask), the sweep's throttle kinds
    # ("power,thermal"; app/analysis/throttle.py) and the rest of the clocks sample
    clock_reasons: Mapped[int | None] = mapped_column(BigInteger)
    throttle: Mapped[str | None] = mapped_column(String(32))
    clocks: Mapped[dict[str, Any] | None]


class Baseline(Base):
    """Robust centre (median) and spread (MAD) of a pair's recent healthy history."""

    __tablename__ = "baselines"
    __table_args__ = (UniqueConstraint("host_id", "src", "dst", "test"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    src: Mapped[int]
    dst: Mapped[int]
    test: Mapped[str] = mapped_column(String(16))
    value: Mapped[float] = mapped_column(Float)
    spread: Mapped[float] = mapped_column(Float)
    n: Mapped[int]
    window_s: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[datetime]


class MeasurementRollup(Base):
    """Hourly aggregate of one (pair, test): min/max/sum over uncontended successes."""

    __tablename__ = "measurement_rollups"
    __table_args__ = (
        UniqueConstraint("host_id", "src", "dst", "test", "hour"),
        Index(None, "hour"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    src: Mapped[int]
    dst: Mapped[int]
    test: Mapped[str] = mapped_column(String(16))
    hour: Mapped[datetime]
    count: Mapped[int]
    min: Mapped[float | None] = mapped_column(Float)
    max: Mapped[float | None] = mapped_column(Float)
    sum: Mapped[float | None] = mapped_column(Float)
    contended_count: Mapped[int]
    error_count: Mapped[int]


# --------------------------------------------------------------------------- judged state
# Written when something changes (after a report is ingested, and by the periodic evaluation
# for time-based conditions); read by every reader. `since`: when the object entered its
# current verdict; `judged_at`: when it was last judged. One row per object, replaced in place.


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
        "running baseline, the newest samples, packed (app/judging/packed.py); null: seeded "
        "from history at the next sweep.")


# --------------------------------------------------------------------------- alerts


class Alert(Base):
    """One alert instance (a rule firing for one label set) from pending to resolved."""

    __tablename__ = "alerts"
    __table_args__ = (
        Index(None, "fingerprint", "state"),
        Index(None, "host", "state"),
        # At most one pending-or-firing row per fingerprint, whatever replica writes it.
        Index("uq_alerts_active_fingerprint", "fingerprint", unique=True,
              postgresql_where=text("state IN ('pending', 'firing')"),
              sqlite_where=text("state IN ('pending', 'firing')")),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    rule: Mapped[str] = mapped_column(String(128))
    fingerprint: Mapped[str] = mapped_column(String(64))
    host: Mapped[str | None] = mapped_column(String(253))
    labels: Mapped[dict[str, Any]]
    annotations: Mapped[dict[str, Any]]
    state: Mapped[str] = mapped_column(String(16))  # pending | firing | resolved
    active_since: Mapped[datetime]
    fired_at: Mapped[datetime | None]
    resolved_at: Mapped[datetime | None]
    value: Mapped[float | None] = mapped_column(Float)
    updated_at: Mapped[datetime]
    # migration 0002 (alerting): acknowledgement and what Alertmanager was last told
    acked_by: Mapped[str | None] = mapped_column(String(128))
    acked_at: Mapped[datetime | None]
    notified_state: Mapped[str | None] = mapped_column(String(16))  # firing | resolved
    notified_at: Mapped[datetime | None]


class AlertEvent(Base):
    __tablename__ = "alert_events"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    alert_id: Mapped[int] = mapped_column(
        ForeignKey("alerts.id", ondelete="CASCADE"), index=True
    )
    state: Mapped[str] = mapped_column(String(16))
    at: Mapped[datetime]
    value: Mapped[float | None] = mapped_column(Float)
    message: Mapped[str | None] = mapped_column(Text)


class Silence(Base):
    __tablename__ = "silences"
    __table_args__ = (Index(None, "ends_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    matchers: Mapped[list[Any]]  # [{"name", "value", "is_regex", "is_equal"}]
    created_by: Mapped[str] = mapped_column(String(128))
    comment: Mapped[str] = mapped_column(Text)
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime]
    created_at: Mapped[datetime]


__all__ = [
    "Alert", "AlertEvent", "Base", "Baseline", "Gpu", "GpuSample", "Host", "JudgedGpu",
    "JudgedHost", "JudgedLink", "JudgedPair", "JudgedTest", "LinkSample", "Measurement",
    "MeasurementRollup", "NvLink", "Pair", "ReportRow", "Silence",
]


# --------------------------------------------------------------------------- debounce (0005)
# Issue 11 item 7: times after which faults are expected and pages are held back. Verdicts and
# alerts are still computed and shown; only delivery to Alertmanager waits.


class MaintenanceWindow(Base):
    """A declared maintenance window of one host: no pages between `starts_at` and `ends_at`."""

    __tablename__ = "maintenance_windows"
    __table_args__ = (Index(None, "host", "ends_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    host: Mapped[str] = mapped_column(String(253))
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime]
    created_by: Mapped[str] = mapped_column(String(128))
    comment: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]


class HostRuntime(Base):
    """What the host's newest report said about its probe and driver start and Fabric Manager:
    links still train just after either start, so pages settle for a while after them."""

    __tablename__ = "host_runtime"

    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"),
                                         primary_key=True)
    probe_started_at: Mapped[datetime | None]
    driver_loaded_at: Mapped[datetime | None]
    fabric_manager: Mapped[dict[str, Any] | None]
    updated_at: Mapped[datetime]


__all__ += ["HostRuntime", "MaintenanceWindow"]


# --------------------------------------------------------------------------- fleet peers (0010)
# Issue 15: what a pair should reach, judged against the same pair on its fleet peers.


class FleetPeerStat(Base):
    """The fleet's distribution of the newest healthy judged values of one test in one peer
    group (GPU model, topology class, driver). Recomputed by the leader's periodic round
    (`app/services/fleet_peers.py`); a host judgement reads its few rows, never the fleet.
    `changed_at` moves only when the median moved by more than PEERWATCH_FLEET_PEER_REJUDGE
    since `ref_median`, or the group crossed the minimum size: what re-judges a host."""

    __tablename__ = "fleet_peer_stats"
    __table_args__ = (UniqueConstraint("gpu_model", "topology", "driver", "test"),
                      Index(None, "gpu_model", "driver"))

    id: Mapped[int] = mapped_column(primary_key=True)
    gpu_model: Mapped[str] = mapped_column(String(128))
    topology: Mapped[str] = mapped_column(String(32))
    driver: Mapped[str] = mapped_column(String(64))
    test: Mapped[str] = mapped_column(String(16))
    hosts: Mapped[int]
    pairs: Mapped[int]
    median: Mapped[float | None] = mapped_column(Float)
    low: Mapped[float | None] = mapped_column(Float, doc="The worse-side percentile.")
    ref_median: Mapped[float | None] = mapped_column(Float)
    computed_at: Mapped[datetime]
    changed_at: Mapped[datetime]


__all__ += ["FleetPeerStat"]


class JobSnapshot(Base):
    """A job snapshot (`probes/snapshot.py`) as it arrived: the host's fabric state around a
    job (Slurm prolog/epilog) or taken by hand, kept whole in `body` for the diff. The host
    is a name, not a key: a node's prolog may post before its probe ever reported."""

    __tablename__ = "job_snapshots"
    __table_args__ = (Index(None, "host", "taken_at"), Index(None, "host", "job_id"),
                      Index(None, "taken_at"))

    id: Mapped[int] = mapped_column(primary_key=True)
    snapshot_id: Mapped[uuid.UUID] = mapped_column(Uuid, unique=True)
    host: Mapped[str] = mapped_column(String(253))
    job_id: Mapped[str | None] = mapped_column(String(64))
    phase: Mapped[str] = mapped_column(String(16))
    taken_at: Mapped[datetime]
    received_at: Mapped[datetime]
    digest: Mapped[str] = mapped_column(String(64))  # SHA-256 of the body: retry vs reuse
    body: Mapped[dict[str, Any]]

from app.models_drain import DrainAction, DrainBreaker, DrainMark  # noqa: E402 (migration 0015)

__all__ += ["DrainAction", "DrainBreaker", "DrainMark"]

from app.models_events import FabricEventRow  # noqa: E402 (migration 0016)

__all__ += ["FabricEventRow"]
from app.models_jobs import GpuJobSpan  # noqa: E402 (migration 0018)

__all__ += ["GpuJobSpan"]
from app.models_received import ReceivedReport  # noqa: E402 (migration 0023)

__all__ += ["ReceivedReport"]
