"""Settings of the probe side: one pydantic-settings class, read from `PEERWATCH_PROBE_*`.

Every knob of `peerwatch probe` lives here, so the command line, the environment (a
DaemonSet's `env:`) and the tests all configure the same object. Command-line options
override the environment, which overrides the defaults below; the CLI help prints these
defaults, so the two can never drift apart.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from peerwatch.probes.report import (
    GPU_TESTS,
    JOINT_TESTS,
    MAX_GPUS,
    PAIR_TESTS,
    TestName,
    valid_hostname,
)

ENV_PREFIX = "PEERWATCH_PROBE_"


def default_spool_dir() -> Path:
    """Where undelivered reports wait: under XDG_STATE_HOME (the FHS place for such state)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "peerwatch" / "spool"


def _csv(value: Any) -> Any:
    """`ce_write,latency` from the environment or the command line; lists pass through."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class ProbeSettings(BaseSettings):
    """How one host's probe measures, when, and where its reports go."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid")

    server_url: str = Field(default="http://127.0.0.1:8000", min_length=1)
    # The probe's credential: from PEERWATCH_PROBE_TOKEN, else read from token_file (never
    # the command line, where every local user reads it from /proc).
    token: str = ""
    token_file: Path | None = Path("/etc/peerwatch/probe-token")
    fabric: str = "auto"  # "auto" | "nvml" | "simulated:<preset>"
    hostname: str | None = None  # overrides the name the fabric reports (the demo's fleet)

    inventory_interval_s: float = Field(default=30.0, gt=0)
    sweep_interval_s: float = Field(default=600.0, gt=0)
    sweep_jitter_s: float = Field(default=60.0, ge=0)  # each sweep waits interval + U(0, jitter)

    # A GPU is busy (skipped) with any compute process or utilisation above this.
    idle_max_utilization_pct: float = Field(default=10.0, ge=0, le=100)
    force: bool = False  # probe busy GPUs too (maintenance windows)
    watchdog_timeout_s: float = Field(default=30.0, gt=0)  # one transfer test's limit
    # NVLS (NVLink SHARP, multicast) all-reduce: off unless the operator opts in; on, the
    # probe's NCCL runs with NCCL_NVLS_ENABLE=1 and sweeps add `nvls_allreduce`.
    nvls: bool = False

    # How many GPUs this host should have (e.g. its Slurm Gres count); None: not said. A
    # report listing fewer, and no evidence for the rest, names the rest missing.
    expected_gpus: int | None = Field(default=None, ge=1, le=MAX_GPUS)

    # Xid/SXid events (NVML events and the kernel log) ride on the reports; off: none read.
    events: bool = True
    kmsg_path: Path = Path("/dev/kmsg")

    spool_dir: Path = Field(default_factory=default_spool_dir)
    spool_max_bytes: int = Field(default=64 << 20, gt=0)

    request_timeout_s: float = Field(default=10.0, gt=0)
    backoff_initial_s: float = Field(default=5.0, gt=0)
    backoff_max_s: float = Field(default=300.0, gt=0)

    # Which job held each GPU: the dcgm-exporter-style mapping directory the Slurm
    # prolog writes, and the kubelet's pod-resources socket; None: not read.
    job_mapping_dir: Path | None = Path("/run/peerwatch/job-mapping")
    kubelet_socket: Path | None = Path("/var/lib/kubelet/pod-resources/kubelet.sock")

    # The agent's own /metrics (per link, GPU, pair); None: not served.
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    metrics_addr: str = "0.0.0.0"
    metrics_tests: Annotated[list[TestName], NoDecode, BeforeValidator(_csv)] = Field(
        default_factory=lambda: [*PAIR_TESTS, *GPU_TESTS, *JOINT_TESTS], min_length=1)
    # Opt-in test kinds added to every sweep (gdr_loopback: GPUDirect RDMA through each
    # GPU's nearest NIC, docs/network.md); none by default.
    opt_in_tests: Annotated[list[TestName], NoDecode, BeforeValidator(_csv)] = Field(
        default_factory=list)

    @field_validator("server_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"server URL must start with http:// or https://, got {value!r}")
        return value.rstrip("/")

    @field_validator("job_mapping_dir", "kubelet_socket", "token_file", mode="before")
    @classmethod
    def _empty_is_off(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator("hostname")
    @classmethod
    def _hostname_rule(cls, value: str | None) -> str | None:
        return valid_hostname(value) if value else value

    @model_validator(mode="after")
    def _backoff_order(self) -> ProbeSettings:
        if self.backoff_max_s < self.backoff_initial_s:
            raise ValueError("backoff_max_s must not be smaller than backoff_initial_s")
        return self
