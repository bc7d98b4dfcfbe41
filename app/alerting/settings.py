"""Settings of alerting and `/metrics`, read from `PEERWATCH_*` like the server's own.

Kept apart from `app/config.py` (the server's) so that this package's knobs live with it; the
judgement thresholds the server already has (degraded ratios, sustain time, error rates) are
read from there, never duplicated here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BeforeValidator, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.config import parse_csv
from probes.report import PAIR_TESTS, TestName


class MetricsDetail(StrEnum):
    """How fine `/metrics` is: each level keeps everything of the levels below it."""

    PAIR = "pair"  # per pair x test and per NVLink port, plus the below (default)
    GPU = "gpu"  # per GPU (NVLink counts, PCIe link) and per host
    HOST = "host"  # per-host aggregates only: a few dozen series per host


class AlertingSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="PEERWATCH_", env_ignore_empty=True, extra="ignore"
    )

    # --- /metrics
    metrics_detail: MetricsDetail = Field(
        default=MetricsDetail.PAIR,
        description="pair (every pair/test and link), gpu (per-GPU and per-host), "
        "or host (per-host aggregates only) — the cardinality knob for large fleets.",
    )
    metrics_tests: Annotated[list[TestName], NoDecode, BeforeValidator(parse_csv)] = Field(
        default_factory=lambda: list(PAIR_TESTS),
        description="Tests exported per pair (comma-separated); default: all pair tests.",
    )

    # --- rules
    clock_skew_warn_s: float = Field(
        default=60.0, gt=0, description="ProbeClockSkew fires when a probe's reports arrive "
        "more than this many seconds off the time they carry, for 10 min.",
    )
    pcie_check_generation: bool = Field(
        default=True,
        description="PCIeLinkDowntrained also fires on a generation below max (off for GPUs "
        "that lower their PCIe generation when idle to save power).",
    )
    alert_for_s: dict[str, float] = Field(
        default_factory=dict,
        description='Per-rule `for` durations overriding the defaults, JSON: {"NVLinkDown": 120}.',
    )
    alert_eval_interval_s: float = Field(
        default=30.0, ge=0, description="How often the server evaluates every rule (0: never)."
    )
    alert_resolved_keep_days: float = Field(
        default=30.0, gt=0, description="Resolved alerts and their history are kept this long."
    )
    alert_settle_s: float = Field(
        default=300.0, ge=0,
        description="Pages wait this long after a probe or the NVIDIA driver started (links "
        "may still be training); alerts are still computed and shown. 0: no settle time.",
    )
    external_url: str = Field(
        default="",
        description="The server's URL as users reach it; prefixes dashboard links in alerts.",
    )

    # --- Alertmanager
    alertmanager_url: str | None = Field(
        default=None, description="Post firing and resolved alerts to this Alertmanager."
    )
    alertmanager_resend_s: float = Field(
        default=60.0, gt=0, description="Firing alerts are re-sent this often."
    )
    alertmanager_timeout_s: float = Field(default=5.0, gt=0)

    @field_validator("alertmanager_url", "external_url")
    @classmethod
    def _no_trailing_slash(cls, value: str | None) -> str | None:
        return value.rstrip("/") if value else value
