"""Server configuration: one pydantic-settings class, every field read from `PEERWATCH_<NAME>`.

Defaults make `peerwatch serve` work with nothing installed but Python (SQLite under
`./data`). A fleet points `PEERWATCH_DATABASE_URL` at PostgreSQL
(`postgresql+psycopg://user@host/db`) and runs as many replicas as it likes: nothing here is
state that replicas would have to share.

Durations are plain seconds (`*_s`) or days (`*_days`) so an env var is just a number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from peerwatch.app.analysis.health import Thresholds

DAY_S = 86_400.0
EXAMPLE_TOKEN_PREFIXES = ("change-me", "changeme", "replace-me")
# The databases peerwatch runs on (app/store/db.py): SQLite, and PostgreSQL through psycopg 3
# (`postgresql://` and `postgres://` mean it too).
DATABASE_SCHEMES = ("sqlite", "sqlite+pysqlite", "postgresql", "postgres", "postgresql+psycopg")
DATABASE_URL_FORMS = "sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB"


def supported_database_url(url: str) -> str:
    """`url` when peerwatch can run on it, else ValueError naming what it accepts (a
    `mysql://` URL is refused here, not by a missing driver deep in SQLAlchemy)."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme not in DATABASE_SCHEMES:
        named = f"{scheme!r} is not supported" if scheme else "no scheme://"
        raise ValueError(f"{named}; use {DATABASE_URL_FORMS}")
    return url


def parse_csv(value: Any) -> Any:
    """Accept `a,b,c` from an env var as well as a real list (from code or JSON)."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="PEERWATCH_", env_ignore_empty=True, extra="ignore"
    )

    # --- storage
    data_dir: Path = Field(
        default=Path("data"), description="Where the default SQLite file lives."
    )
    database_url: str = Field(
        default="",
        description="SQLAlchemy URL; empty means sqlite:///<data_dir>/peerwatch.db. "
        "PostgreSQL: postgresql+psycopg://user:password@host:5432/db",
    )
    sqlite_busy_timeout_ms: int = Field(
        default=30_000, ge=0,
        description="How long a SQLite writer waits for the lock; a fleet of probes and the "
        "demo backfill queue behind one writer (5 s gave HTTP 500s in the 12-host demo).")
    db_pool_size: int = Field(default=5, ge=1, description="PostgreSQL connection pool size.")

    # --- auth and ingest limits
    secret_file: Path | None = Field(
        default=None,
        description="The credential secret (keys in hex, newest first) every probe, gate, "
        "drain and admin credential is derived from; empty means <data_dir>/credential-secret, "
        "created on first start. Replicas share one file. docs/security.md.")
    probe_tokens: Annotated[list[str], NoDecode, BeforeValidator(parse_csv)] = Field(
        default_factory=list,
        description="Fleet-wide probe tokens (comma-separated): an opt-in, warned about at "
        "start, since any of them speaks for every host. Probes use host-bound credentials "
        "(`peerwatch token issue --host H`).",
    )
    admin_token: str | None = Field(
        default=None, description="A shared admin token, recorded as admin:admin-token; "
        "unset: only issued admin credentials (`peerwatch token issue --admin NAME`)."
    )
    max_body_bytes: int = Field(
        default=16 << 20, ge=1024, description="Largest report body accepted; bigger gets 413."
    )
    ingest_concurrency: int = Field(
        default=4, ge=1, description="Reports parsed and stored at once by one process.")
    ingest_queue: int = Field(
        default=32, ge=0, description="Reports that may wait for a free ingest slot; one more "
        "is answered 429 at once.")
    ingest_wait_s: float = Field(
        default=1.0, ge=0, description="Longest wait for an ingest slot before 503; 0: never "
        "wait (429 whenever no slot is free). A newcomer is let in to wait only when it "
        "expects a slot within half of this (by the recent time a slot is held), so a "
        "saturated server still refuses at the door at once; one let in is stored rather "
        "than refused when a sweep holds its slot a few ms longer than the estimate.")
    ingest_retry_after_s: int = Field(
        default=5, ge=1, description="Retry-After (seconds) sent with 429/503 when saturated.")
    header_timeout_s: float = Field(
        default=10.0, gt=0, description="A request's line and headers must arrive within "
        "this many seconds of its first byte (or of the connection, for its first request); "
        "slower: 408 and the connection closed (app/api/http_guard.py).")
    body_timeout_s: float = Field(
        default=60.0, gt=0, description="A request's body must arrive whole within this "
        "many seconds of its headers (16 MiB at about 2 Mbit/s); slower: 408 and the "
        "connection closed. A report is given an ingest slot only once its body is here.")
    max_header_bytes: int = Field(
        default=64 << 10, ge=4096, description="Largest request line and headers together, "
        "in bytes; more: 431 and the connection closed, before they are all received.")
    max_headers: int = Field(
        default=100, ge=8, description="Most header fields one request may carry; more: 431.")
    max_connections_per_address: int = Field(
        default=64, ge=0, description="Connections one client address may hold open at "
        "once; one more is answered 429 (Retry-After) and closed. 0: no limit (behind a "
        "proxy or NAT, where every probe shares one address).")
    judge_workers: int = Field(
        default=1, ge=1, description="Threads judging hosts after their reports are stored, "
        "in the judge process `serve` starts (app/judging/worker.py); SQLite judges "
        "one host at a time whatever this says.")
    judge_processes: int = Field(
        default=1, ge=1, le=64, description="Judge processes `serve` starts, each judging "
        "its share of the hosts (judging is CPU-bound: it scales with processes, not "
        "threads); SQLite: one.")
    worker_nice: int = Field(
        default=10, ge=0, le=19, description="Niceness `serve` adds to its ingest worker and "
        "judge processes (app/runtime/priority.py), so its event loop, which only answers, gets a "
        "core first on a busy machine and refusals and /healthz stay fast; the workers still "
        "get every core nobody else wants. 0: the server's own priority.")
    receive_nice: int = Field(
        default=0, ge=0, le=19, description="Niceness `serve` adds to its ingest workers "
        "while they check a report and store it whole, the part its POST waits for; the "
        "report's expansion into rows runs at `worker_nice` (or this, if nicer). 0: the "
        "server's own priority (its event loop still wakes first: its turns are short).")
    judge_nice: int | None = Field(
        default=None, ge=0, le=19, description="Niceness `serve` adds to its judge processes; "
        "unset: `worker_nice`. Judging is the work that may wait: nicer than the ingest "
        "workers, a report's check and store get a core before a judgement does.")
    judge_scan_s: float = Field(
        default=2.0, gt=0, description="How often the judge process asks the database for "
        "hosts whose newest report (older than this) is newer than their judgement: the safety "
        "net under the server's wakes, and how two replicas' judges share work.")

    # --- retention
    retention_raw_days: float = Field(
        default=14.0, gt=0, description="Raw samples kept this long."
    )
    retention_rollup_days: float = Field(default=365.0, gt=0, description="Hourly rollups kept.")
    maintenance_interval_s: float = Field(
        default=3_600.0, gt=0, description="How often `serve` runs the rollup/prune job."
    )
    series_raw_max_s: float = Field(
        default=2 * DAY_S, gt=0, description="Longer series are read from hourly rollups."
    )

    # --- judgement
    stale_after_s: float = Field(
        default=90.0, gt=0, description="A host whose probe has not been heard for this long "
        "(by the server's clock) is stale: unknown, not schedulable, and ProbeStale fires. "
        "The default is three of the probe's 30 s inventory intervals."
    )
    degraded_ratio_expected: float = Field(
        default=0.7, gt=0, le=1, description="measured/expected below this is low."
    )
    degraded_ratio_baseline: float = Field(
        default=0.8, gt=0, le=1, description="measured/baseline below this is low."
    )
    degraded_sustain_s: float = Field(
        default=600.0, ge=0, description="A pair is degraded once it has been low this long."
    )
    intermittent_low: int = Field(
        default=3, ge=1, description="A pair is degraded when this many of its newest "
        "`intermittent_of` judged samples are low (an intermittent fault).")
    intermittent_of: int = Field(
        default=6, ge=1, description="How many newest judged samples the intermittent rule "
        "looks at.")
    health_lookback_s: float = Field(
        default=7_200.0, gt=0, description="History read back from the newest sweep to judge "
        "pairs (at least twice degraded_sustain_s is used)."
    )
    link_rate_window_s: float = Field(
        default=900.0, gt=0, description="Counter history a link's error rates are judged on."
    )
    pcie_check_generation: bool = Field(
        default=True,
        description="A PCIe link trained at a generation below its maximum makes the GPU "
        "degraded and fires PCIeLinkDowntrained (off for GPUs that lower their PCIe "
        "generation when idle to save power): the verdict and the alert agree.")
    link_flap_window_s: float = Field(
        default=3_600.0, gt=0, description="Window in which a link's downs are counted.")
    link_flap_downs: int = Field(
        default=2, ge=1, description="A link that went down this many times within the "
        "window is degraded (flapping) while it is up.")
    throttle_sweeps_of: int = Field(
        default=6, ge=1, description="A GPU's newest sweeps its throttle verdict looks at.")
    throttle_sweeps_most: int = Field(
        default=4, ge=1, description="A GPU held below its clocks (power cap, thermal, HW "
        "slowdown) in this many of them is degraded on its own (app/analysis/throttle.py).")
    pattern_wait_s: float = Field(
        default=1_800.0, ge=0, description="Longest a pair's own page waits while the GPU "
        "pattern that would explain it may still be forming (app/analysis/pattern_wait.py).")
    baseline_window_days: float = Field(default=7.0, gt=0, description="History a baseline uses.")
    baseline_min_samples: int = Field(
        default=5, ge=1, description="Fewer samples give no baseline."
    )
    baseline_max_samples: int = Field(
        default=200, ge=1, description="Most recent samples per (pair, test) a baseline uses."
    )
    error_rate_degraded_per_s: float = Field(
        default=0.0, ge=0, description="NVLink replay/recovery growth above this is degraded."
    )
    crc_rate_degraded_per_s: float = Field(
        default=1.0, ge=0, description="NVLink CRC flit error growth above this is degraded "
        "(CRC_DATA/ECC_DATA count corrected errors and are not judged)."
    )

    # --- the network between hosts (docs/network.md)
    network_retest_s: float = Field(
        default=21_600.0, gt=0, description="A host pair tested this recently is not planned "
        "again (its hosts' suspects are: they are retested first).")

    # --- fleet peers (docs/fleet-peers.md)
    fleet_peer_floor: float = Field(
        default=0.93, gt=0, le=1, description="A pair (or a host's median over its pairs) "
        "below this fraction of its peer group's median is degraded.")
    fleet_peer_min_hosts: int = Field(
        default=5, ge=2, description="A peer group with fewer hosts judges nobody (its median "
        "says too little), nor is it compared with its sibling drivers.")
    fleet_peer_low_percentile: float = Field(
        default=10.0, gt=0, lt=50, description="The low percentile shown with each group's "
        "median (the worse side: slower bandwidth, longer latency).")
    fleet_peer_rejudge: float = Field(
        default=0.01, gt=0, description="A group's median moving by more than this fraction "
        "re-judges the hosts judged against it (smaller moves are noise).")
    fleet_peer_refresh_s: float = Field(
        default=300.0, ge=0, description="The periodic round recomputes the fleet's peer "
        "stats when they are older than this (a scan of every judged pair: bench/fleet_peers.py).")
    fleet_peer_max_age_s: float = Field(
        default=DAY_S, gt=0, description="Judged values older than this are left out of the "
        "fleet's distributions (a host gone quiet stops counting).")

    @field_validator("database_url")
    @classmethod
    def _supported_database(cls, value: str) -> str:
        return supported_database_url(value) if value else value

    @model_validator(mode="after")
    def _no_shipped_example_tokens(self) -> Settings:
        """A token copied from an example would let anyone who read the example in."""
        for name, tokens in (("PEERWATCH_PROBE_TOKENS", self.probe_tokens),
                             ("PEERWATCH_ADMIN_TOKEN", [self.admin_token or ""])):
            if any(t.lower().startswith(EXAMPLE_TOKEN_PREFIXES) for t in tokens):
                raise ValueError(f"{name} holds an example value ('change-me...'): use a "
                                 "credential from `peerwatch token issue`, or a random one")
        return self

    @model_validator(mode="after")
    def _default_database_url(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{(self.data_dir / 'peerwatch.db').resolve()}"
        return self

    @property
    def retention_raw_s(self) -> float:
        return self.retention_raw_days * DAY_S

    @property
    def retention_rollup_s(self) -> float:
        return self.retention_rollup_days * DAY_S

    @property
    def baseline_window_s(self) -> float:
        return self.baseline_window_days * DAY_S

    @property
    def thresholds(self) -> Thresholds:
        """The judging thresholds these settings name (analysis/ never reads Settings)."""
        return Thresholds(self.degraded_ratio_expected, self.degraded_ratio_baseline,
                          self.degraded_sustain_s, self.error_rate_degraded_per_s,
                          self.crc_rate_degraded_per_s, self.intermittent_low,
                          self.intermittent_of)
