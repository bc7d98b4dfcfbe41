"""API shapes of alerts and silences (`/api/v1/alerts`, `/api/v1/silences`)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    field_validator,
    model_validator,
)

from peerwatch.app.analysis.matchers import compiled
from peerwatch.probes.report import Timestamp, clean_text

LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# An alert has a handful of labels; a silence needs at most one matcher per label it names.
MAX_MATCHERS = 32
MAX_MATCHER_VALUE = 1024


class AlertState(StrEnum):
    PENDING = "pending"
    FIRING = "firing"
    RESOLVED = "resolved"
    INACTIVE = "inactive"  # was pending, cleared before it fired


class Acknowledgement(BaseModel):
    by: str
    at: datetime


class AlertOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{
        "id": 12, "alertname": "NVLinkDown", "state": "firing", "severity": "critical",
        "host": "gpu-node-17",
        "labels": {"alertname": "NVLinkDown", "severity": "critical", "host": "gpu-node-17",
                   "gpu": "3", "link": "7"},
        "annotations": {"summary": "NVLink 7 of GPU3 on gpu-node-17 is down",
                        "description": "NVML reports link 7 of GPU3 down; GPU3 has 17 of "
                                       "18 links up.",
                        "dashboard": "/#/host/gpu-node-17?gpu=3"},
        "value": 0.0, "active_since": "2026-11-30T10:02:11Z",
        "fired_at": "2026-11-30T10:03:12Z", "resolved_at": None,
        "updated_at": "2026-11-30T10:20:00Z", "acknowledged": None, "silenced_by": [],
        "in_maintenance": False, "held": None,
    }]})

    id: int
    alertname: str
    state: AlertState
    severity: str
    host: str | None
    labels: dict[str, str]
    annotations: dict[str, str]
    value: float | None = Field(description="The figure that made the rule active.")
    active_since: datetime
    fired_at: datetime | None
    resolved_at: datetime | None
    updated_at: datetime
    acknowledged: Acknowledgement | None
    silenced_by: list[int] = Field(description="Ids of active silences that mute it.")
    in_maintenance: bool = Field(
        default=False, description="Its host is in a declared maintenance window: shown, "
        "not sent to Alertmanager.")
    held: str | None = Field(
        default=None, description="Why it is not paged now: maintenance or settling after "
        "the probe or driver started (None: it pages as usual).")


class AlertsResponse(BaseModel):
    alerts: list[AlertOut]


class AlertEventOut(BaseModel):
    state: str = Field(description="pending, firing, resolved, inactive or acknowledged")
    at: datetime
    value: float | None
    message: str | None


class AlertDetail(AlertOut):
    history: list[AlertEventOut]


class AckRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    by: Annotated[str, Field(min_length=1, max_length=128, examples=["alice"]),
                  AfterValidator(clean_text)]
    comment: Annotated[str, Field(default="", max_length=2000,
                                  examples=["replacing the cable at 14:00"]),
                       AfterValidator(clean_text)]


class Matcher(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=128, examples=["host"])
    value: Annotated[str, Field(max_length=MAX_MATCHER_VALUE, examples=["gpu-node-17"]),
                     AfterValidator(clean_text)]
    is_regex: StrictBool = False
    is_equal: StrictBool = True

    @field_validator("name")
    @classmethod
    def _label_name(cls, name: str) -> str:
        if not LABEL_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a label name ([a-zA-Z_][a-zA-Z0-9_]*)")
        return name

    @model_validator(mode="after")
    def _regex_compiles(self) -> Matcher:
        if self.name == "host" and not self.is_regex:  # host names are lowercase
            self.value = self.value.lower()
        if self.is_regex:
            compiled(self.value, ignore_case=self.name == "host")  # ValueError naming it
        return self


# "Exactly one of ends_at and duration_s", said in the schema too (clients and fuzzers read it).
ONE_END: dict[str, Any] = {"oneOf": [{"required": ["ends_at"]}, {"required": ["duration_s"]}]}


class TimeSpanRequest(BaseModel):
    """A span from `starts_at` (default: now) to `ends_at` or for `duration_s`: silences and
    maintenance windows are declared the same way."""

    starts_at: Timestamp | None = Field(default=None, description="Default: now.")
    ends_at: Timestamp | None = None
    duration_s: StrictFloat | None = Field(default=None, gt=0, le=366 * 86_400,
                                     description="Instead of ends_at.")

    @model_validator(mode="after")
    def _one_end(self) -> TimeSpanRequest:
        if (self.ends_at is None) == (self.duration_s is None):
            raise ValueError("give exactly one of ends_at and duration_s")
        for name in ("starts_at", "ends_at"):
            at = getattr(self, name)
            if at is not None and at.tzinfo is None:
                raise ValueError(f"{name} needs a time zone (e.g. 2026-11-30T10:00:00Z)")
        return self

    def span(self, now: datetime) -> tuple[datetime, datetime]:
        """(starts, ends); ValueError naming both when the end is not after the start."""
        starts = self.starts_at or now
        ends = self.ends_at or starts + timedelta(seconds=self.duration_s or 0)
        if ends <= starts:
            raise ValueError(f"ends_at {ends.isoformat()} is not after starts_at "
                             f"{starts.isoformat()}")
        return starts, ends


class SilenceRequest(TimeSpanRequest):
    model_config = ConfigDict(extra="forbid", json_schema_extra={**ONE_END, "examples": [{
        "matchers": [{"name": "host", "value": "gpu-node-17"},
                     {"name": "alertname", "value": "NVLink.*", "is_regex": True}],
        "duration_s": 7200, "created_by": "alice", "comment": "cable swap",
    }]})
    matchers: list[Matcher] = Field(min_length=1, max_length=MAX_MATCHERS)
    created_by: Annotated[str, Field(min_length=1, max_length=128), AfterValidator(clean_text)]
    comment: Annotated[str, Field(default="", max_length=2000), AfterValidator(clean_text)]


class SilenceOut(BaseModel):
    id: int
    matchers: list[dict[str, Any]]
    starts_at: datetime
    ends_at: datetime
    created_by: str
    comment: str
    created_at: datetime
    active: bool


class SilencesResponse(BaseModel):
    silences: list[SilenceOut]
