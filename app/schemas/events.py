"""API shapes of a host's Xid/SXid events (GET /api/v1/hosts/{host}/events)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel


class FabricEventView(BaseModel):
    """One stored event with what the catalog says about it (docs/events.md)."""

    at: datetime
    kind: str  # xid | sxid
    code: int
    label: str  # "Xid 74"
    gpu: int | None
    link: int | None
    switch: str | None
    count: int
    subcode: int | None
    fatal: bool | None
    sources: list[str]
    message: str
    meaning: str
    object: str  # gpu | link | switch
    severity: str  # info | warning | critical
    action: str
    source: str  # the catalog page cited
    catalog_version: str


class HostEventsResponse(BaseModel):
    host: str
    generated_at: datetime
    catalog_version: str
    events: list[FabricEventView]  # newest first, at most 500
