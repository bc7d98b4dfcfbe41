"""API shapes of which job held which GPU: a job's page and the spans beside a
pair's series."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from peerwatch.app.analysis.verdict import Verdict


class JobSpanOut(BaseModel):
    host: str
    gpu: int
    job: str
    source: str = Field(description="mapping_dir (the Slurm prolog's files), kubernetes, or "
                        "snapshots (a job only its prolog/epilog snapshots name).")
    first_seen: datetime = Field(description="Start of the first report naming the job.")
    last_seen: datetime = Field(description="End of the last report naming the job.")


class JobAlertOut(BaseModel):
    id: int
    rule: str
    state: str
    host: str | None
    labels: dict[str, Any]
    summary: str | None
    active_since: datetime
    resolved_at: datetime | None


class JobVerdictOut(BaseModel):
    host: str
    kind: str = Field(description="host, gpu, link, pair or test")
    key: dict[str, Any] = Field(description="Which one: gpu, link, src/dst, test.")
    verdict: Verdict
    reason: str
    since: datetime


class JobOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{
        "job": "4711", "first_seen": "2026-12-01T02:00:00Z", "last_seen": "2026-12-01T04:00:00Z",
        "hosts": ["gpu-node-7"],
        "held": [{"host": "gpu-node-7", "gpu": 2, "job": "4711", "source": "mapping_dir",
                  "first_seen": "2026-12-01T02:00:00Z", "last_seen": "2026-12-01T04:00:00Z"}],
        "alerts": [], "verdicts": []}]})
    job: str
    first_seen: datetime
    last_seen: datetime
    hosts: list[str]
    held: list[JobSpanOut] = Field(description="Each GPU the job held, and when.")
    alerts: list[JobAlertOut] = Field(
        description="Alerts on its hosts (of its GPUs, or of the whole host) active at some "
                    "time while it ran.")
    verdicts: list[JobVerdictOut] = Field(
        description="Verdicts now not healthy on its GPUs that began before it ended.")
