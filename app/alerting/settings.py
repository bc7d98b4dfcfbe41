"""Settings of alerting and `/metrics`, read from `PEERWATCH_*` like the server's own.

Kept apart from `app/runtime/config.py` (the server's) so that this package's knobs live with
it; the
judgement thresholds the server already has (degraded ratios, sustain time, error rates) are
read from there, never duplicated here.
"""

from __future__ import annotations

import logging
import os
from enum import StrEnum

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

log = logging.getLogger(__name__)


class MetricsDetail(StrEnum):
    """How fine the server's `/metrics` is. Per-pair and per-link series are the probe
    agents' (`peerwatch probe --metrics-port`); `pair`, the old default, reads as `gpu`."""

    GPU = "gpu"  # per-GPU verdicts and the per-host series (default)
    HOST = "host"  # per-host series only


class AlertingSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="PEERWATCH_", env_ignore_empty=True, extra="ignore"
    )

    # --- /metrics
    metrics_detail: MetricsDetail = Field(
        default=MetricsDetail.GPU,
        description="gpu (per-GPU verdicts and per-host series) or host (per-host only). "
        "Per-pair and per-link series come from the probe agents.",
    )

    # --- rules
    clock_skew_warn_s: float = Field(
        default=60.0, gt=0, description="ProbeClockSkew fires when a probe's reports arrive "
        "more than this many seconds off the time they carry, for 10 min.",
    )
    alert_for_s: dict[str, float] = Field(
        default_factory=dict,
        description='Per-rule `for` durations overriding the defaults, JSON: {"NVLinkDown": 120}.',
    )
    alert_eval_interval_s: float = Field(
        default=30.0, ge=0, description="How often the server evaluates every rule (0: never)."
    )
    probe_stale_restart_grace_s: float = Field(
        default=390.0, ge=0,
        description="After the server starts, a host last heard before the start that was "
        "fresh when the server went away is not paged stale for this long: its probe may "
        "still be backing off (up to 300 s, plus PEERWATCH_STALE_AFTER_S). Its verdict is "
        "still stale and its GPUs unscheduled until it reports. 0: no grace.",
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

    @field_validator("metrics_detail", mode="before")
    @classmethod
    def _pair_moved_to_agents(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() == "pair":
            log.warning("PEERWATCH_METRICS_DETAIL=pair: per-pair and per-link series now come "
                        "from the probe agents (peerwatch probe --metrics-port); the server "
                        "exports per-GPU verdicts (as 'gpu'). See docs/alerts.md.")
            return MetricsDetail.GPU.value
        return value

    @model_validator(mode="after")
    def _metrics_tests_moved_to_agents(self) -> AlertingSettings:
        if os.environ.get("PEERWATCH_METRICS_TESTS"):
            log.warning("PEERWATCH_METRICS_TESTS is no longer read by the server: per-pair "
                        "series come from the probe agents; set PEERWATCH_PROBE_METRICS_TESTS "
                        "there. See docs/alerts.md.")
        return self

    @field_validator("alertmanager_url", "external_url")
    @classmethod
    def _no_trailing_slash(cls, value: str | None) -> str | None:
        return value.rstrip("/") if value else value
