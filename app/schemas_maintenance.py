"""API shapes of maintenance windows (`/api/v1/maintenance`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator


class MaintenanceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{
        "host": "gpu-node-17", "duration_s": 7200, "created_by": "alice",
        "comment": "NVSwitch tray swap"}]})
    host: str = Field(min_length=1, max_length=253, examples=["gpu-node-17"])
    starts_at: datetime | None = Field(default=None, description="Default: now.")
    ends_at: datetime | None = None
    duration_s: float | None = Field(default=None, gt=0, le=366 * 86_400,
                                     description="Instead of ends_at.")
    created_by: str = Field(default="admin", min_length=1, max_length=128)
    comment: str = Field(default="", max_length=2000)

    @model_validator(mode="after")
    def _one_end(self) -> MaintenanceRequest:
        if (self.ends_at is None) == (self.duration_s is None):
            raise ValueError("give exactly one of ends_at and duration_s")
        for name in ("starts_at", "ends_at"):
            at = getattr(self, name)
            if at is not None and at.tzinfo is None:
                raise ValueError(f"{name} needs a time zone (e.g. 2026-11-30T10:00:00Z)")
        return self


class MaintenanceOut(BaseModel):
    id: int
    host: str
    starts_at: datetime
    ends_at: datetime
    created_by: str
    comment: str
    created_at: datetime
    active: bool = Field(description="The window covers now: the host's alerts are not paged.")


class MaintenanceResponse(BaseModel):
    windows: list[MaintenanceOut]
