"""API shapes of maintenance windows (`/api/v1/maintenance`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from peerwatch.app.schemas.alerts import ONE_END, TimeSpanRequest
from peerwatch.probes.report import HOSTNAME_RULE, clean_text, valid_hostname


class MaintenanceRequest(TimeSpanRequest):
    model_config = ConfigDict(extra="forbid", json_schema_extra={**ONE_END, "examples": [{
        "host": "gpu-node-17", "duration_s": 7200, "created_by": "alice",
        "comment": "NVSwitch tray swap"}]})
    host: Annotated[str, Field(min_length=1, max_length=253, examples=["gpu-node-17"],
                               description=f"Host name: {HOSTNAME_RULE}."),
                    AfterValidator(valid_hostname)]
    created_by: Annotated[str, Field(default="admin", min_length=1, max_length=128),
                          AfterValidator(clean_text)]
    comment: Annotated[str, Field(default="", max_length=2000), AfterValidator(clean_text)]


class MaintenanceOut(BaseModel):
    id: int
    host: str
    starts_at: datetime
    ends_at: datetime
    created_by: str
    comment: str
    created_at: datetime
    active: bool = Field(description="The window covers now: the host's alerts are not paged.")
    host_known: bool = Field(
        default=True, description="The host has reported to this server. A window may be "
        "declared before a host's first report; false also catches a mistyped name.")


class MaintenanceResponse(BaseModel):
    windows: list[MaintenanceOut]
