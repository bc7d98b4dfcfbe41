"""API shapes of job snapshots: what storing one answers, the list, and the job's diff.

The snapshot itself travels in its wire model (`probes/snapshot.py`); these are the answers
around it. A diff line carries its severity and kind for programs and its text for people,
the very lines `peerwatch snapshot --diff` prints.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from peerwatch.probes.snapshot_diff import Change


class SnapshotStored(BaseModel):
    snapshot_id: uuid.UUID
    host: str
    job_id: str | None
    phase: str
    duplicate: bool = Field(description="True when this snapshot_id was stored before; "
                                        "nothing changed.")


class SnapshotSummary(BaseModel):
    model_config = ConfigDict(json_schema_extra={"example": {
        "snapshot_id": "0b7e3c1a-55e2-4c54-8f0e-5a0d1f2b9c33", "host": "gpu-node-17",
        "job_id": "81234", "phase": "prolog", "taken_at": "2026-12-01T10:00:00Z",
        "received_at": "2026-12-01T10:00:00.2Z", "gpus": 8, "links_down": 0}})
    snapshot_id: uuid.UUID
    host: str
    job_id: str | None
    phase: str
    taken_at: datetime
    received_at: datetime
    gpus: int = Field(description="GPUs in the snapshot.")
    links_down: int = Field(description="NVLink ports down in the snapshot.")


class SnapshotList(BaseModel):
    host: str
    snapshots: list[SnapshotSummary] = Field(description="Newest first.")


class DiffLine(BaseModel):
    severity: str = Field(description="critical | warning | info")
    kind: str = Field(description="e.g. gpu_missing, link_down, errors_grew, pcie_gen_down")
    text: str

    @classmethod
    def of(cls, change: Change) -> DiffLine:
        return cls(severity=change.severity.name.lower(), kind=change.kind, text=change.text)


class JobDiff(BaseModel):
    model_config = ConfigDict(json_schema_extra={"example": {
        "host": "gpu-node-17", "job_id": "81234",
        "before": {"snapshot_id": "0b7e3c1a-55e2-4c54-8f0e-5a0d1f2b9c33", "phase": "prolog"},
        "changes": [{"severity": "critical", "kind": "link_down",
                     "text": "GPU3 link 5 went down"},
                    {"severity": "warning", "kind": "errors_grew",
                     "text": "GPU3 link 5 replay errors +12 (0 -> 12)"}]}})
    host: str
    job_id: str
    before: SnapshotSummary = Field(description="The job's prolog snapshot (newest if several).")
    after: SnapshotSummary = Field(description="The job's epilog snapshot (newest if several).")
    changes: list[DiffLine] = Field(description="Most serious first; empty: nothing changed.")
