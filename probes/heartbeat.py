"""The heartbeat: what an agent whose host has not changed sends instead of a full report.

Schema 5. A host's inventory, jobs and error counters rarely change, yet a full report of an
8-GPU host every 30 s was most of its server CPU (issue 37). So the agent (`probes/agent/
changes.py`) sends a full `Report` when what the server judges from changed (or a keyframe
is due), and otherwise this: who it is, and which full report of its own the server should
still hold (`base_report_id`). The server (`app/routes/heartbeats.py`) answers 204 and only
notes the host as heard (its last-heard time: `ProbeStale` still sees a silent probe), or
409 when neither its memory nor its database holds that report for the host (a wiped
database, a host's rows pruned): the agent then sends a full report at once, so nothing is
ever judged from a partial picture.

A heartbeat is never spooled: it says nothing the server could lose.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from peerwatch.probes.report import Timestamp, valid_hostname

HEARTBEAT_SCHEMA_VERSION = 5
HEARTBEATS_PATH = "/api/v1/heartbeats"
HEARTBEAT_MAX_BYTES = 4096  # the largest legal heartbeat is ~450 bytes
RESYNC_STATUS = 409  # "send a full report": the server holds no state of this host to apply


class Heartbeat(BaseModel):
    """A host that has not changed since its full report `base_report_id`, heard at `at`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[5] = 5  # HEARTBEAT_SCHEMA_VERSION
    host: Annotated[str, Field(min_length=1, max_length=253), AfterValidator(valid_hostname)]
    base_report_id: uuid.UUID = Field(
        description="The agent's newest full report the server acknowledged: the host is "
                    "as that report said.")
    at: Timestamp
