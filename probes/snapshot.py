"""A job snapshot: one host's fabric state at one moment, with no transfers — the wire model.

When a job dies with an "uncorrectable NVLink error" that names no link, the operator wants
the fabric just before and just after the job, to diff (`probes/snapshot_diff.py`). A
snapshot is what the probe's inventory and counter readers see (`probes/snapshot_read.py`):
the GPUs with their PCIe link and fabric registration, every NVLink port and its state, the
per-link error and traffic counters, Fabric Manager, the driver. Pairs are left out: they
cost NVML calls per ordered pair and follow from the ports. `took_s` is the reading's wall
time (it must stay well under a second on an 8-GPU host: it runs in a Slurm prolog).

Versioned like `probes/report.py` and built from its types, so probe and server validate
snapshots with the very same models. Pure pydantic: the probe-only install can build,
send and diff snapshots without FastAPI or SQLAlchemy.
"""

from __future__ import annotations

import re
import uuid
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from peerwatch.probes.report import (
    MAX_ERRORS,
    CounterSample,
    HostIdentity,
    Inventory,
    ProbeError,
    Seconds,
    Timestamp,
    utcnow,
)

SNAPSHOT_SCHEMA_VERSION = 1
SUPPORTED_SNAPSHOT_VERSIONS = (1,)

# Slurm job ids: digits, arrays "1234_7", het jobs "1234+1"; other schedulers use names.
# The id travels in URL paths (/hosts/{host}/jobs/{job_id}/diff), so no "/", "?", "%" or space.
JOB_ID_RULE = "1 to 64 letters, digits, '_', '-', '.', '+'"
JOB_ID = re.compile(r"[A-Za-z0-9_.+-]{1,64}")


def valid_job_id(value: str) -> str:
    if not JOB_ID.fullmatch(value) or value in (".", ".."):
        raise ValueError(f"job id {value[:80]!r} breaks the rule: {JOB_ID_RULE}")
    return value


JobId = Annotated[str, AfterValidator(valid_job_id)]


class Phase(StrEnum):
    """When the snapshot was taken: around a job (Slurm prolog/epilog) or by hand."""

    PROLOG = "prolog"
    EPILOG = "epilog"
    MANUAL = "manual"


class Snapshot(BaseModel):
    """One host's fabric state; `job_id` and `phase` tie it to a job (see module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1  # SNAPSHOT_SCHEMA_VERSION
    snapshot_id: uuid.UUID = Field(default_factory=uuid.uuid4)
    host: HostIdentity
    taken_at: Timestamp = Field(default_factory=utcnow)
    took_s: Seconds = 0.0  # wall time of the reading
    job_id: JobId | None = None
    phase: Phase = Phase.MANUAL
    inventory: Inventory
    counters: CounterSample
    errors: list[ProbeError] = Field(default_factory=list, max_length=MAX_ERRORS)

    @model_validator(mode="after")
    def _job_for_job_phases(self) -> Snapshot:
        if self.phase is not Phase.MANUAL and self.job_id is None:
            raise ValueError(f"a {self.phase.value} snapshot needs a job_id")
        return self
