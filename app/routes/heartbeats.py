"""`POST /api/v1/heartbeats`: an agent whose host has not changed since a full report.

A heartbeat (`probes/heartbeat.py`, schema 5) costs the server a credential check, a parse
of a few hundred bytes and two dict operations: the host is noted as heard
(`app/ingest/heard.py`, written with the other arrivals in one batched UPDATE of
`hosts.last_heard_at`, so `ProbeStale` still sees a silent probe) and its `base_report_id`
is looked up among the full reports this process stored (`app/ingest/held.py`), or once
in the database when this process did not see it (restarted, another replica took it).
Nothing else is written, nothing is judged. 204 when that report is held; 409 when it is not
(the database lost the host, or never had the report): the agent then sends a full report
at once, so the server never judges from a partial picture.

No ingest slot is taken: a heartbeat is cheaper than the refusal a saturated gate answers.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response, status
from starlette.concurrency import run_in_threadpool

from peerwatch.app.api.deps import ProbeDep, forbidden_host
from peerwatch.app.api.json_body import read_limited_body
from peerwatch.app.api.wire_body import parse_wire
from peerwatch.app.ingest.heard import heard_for
from peerwatch.app.ingest.held import held_for, stored_for
from peerwatch.probes.agent.sender import HOST_HEADER
from peerwatch.probes.heartbeat import (
    HEARTBEAT_MAX_BYTES,
    HEARTBEAT_SCHEMA_VERSION,
    HEARTBEATS_PATH,
    RESYNC_STATUS,
    Heartbeat,
)
from peerwatch.probes.report import utcnow

router = APIRouter(prefix=HEARTBEATS_PATH, tags=["ingest"])

RESYNC_DETAIL = ("this server holds no full report {id} of host {host} (the database lost "
                 "the host, or never stored that report): send a full report")


@router.post(
    "",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    summary="A probe whose host has not changed since a full report",
    responses={
        400: {"description": "Unsupported schema_version (the detail names the supported)."},
        401: {"description": "No bearer token."},
        403: {"description": "The bearer token is not a probe credential, or its host is "
                             "not the heartbeat's."},
        409: {"description": "The full report the heartbeat names is not held here: send a "
                             "full report."},
        413: {"description": f"Body over {HEARTBEAT_MAX_BYTES} bytes."},
        422: {"description": "Not a heartbeat (the detail names each field)."},
    },
    openapi_extra={"requestBody": {
        "required": True,
        "content": {"application/json": {"schema": Heartbeat.model_json_schema()}},
    }},
)
async def post_heartbeat(request: Request, speaker: ProbeDep) -> Response:
    """Note the host as heard; 409 when the full report it stands on is not held here."""
    arrived = utcnow()
    named = request.headers.get(HOST_HEADER)
    if named is not None and (refused := forbidden_host(speaker, named)):
        raise refused  # before the body is read, as a report's
    body = await read_limited_body(request, HEARTBEAT_MAX_BYTES, "heartbeat",
                                   setting="HEARTBEAT_MAX_BYTES")
    beat = parse_wire(body, Heartbeat, (HEARTBEAT_SCHEMA_VERSION,), "heartbeat")
    if refused := forbidden_host(speaker, beat.host):
        raise refused
    heard_for(request.app).heard(beat.host, arrived)
    held = held_for(request.app)
    if not held.holds(beat.host, beat.base_report_id):
        if not await run_in_threadpool(_stored, request.app, beat):
            raise HTTPException(RESYNC_STATUS, detail=RESYNC_DETAIL.format(
                id=beat.base_report_id, host=beat.host))
        held.noted(beat.host, beat.base_report_id)  # the next is answered from memory
    return Response(status_code=status.HTTP_204_NO_CONTENT)


def _stored(app: Any, beat: Heartbeat) -> bool:
    """Once per host and process (restarted, another replica took the report): is the
    report the heartbeat stands on in the database?"""
    with app.state.sessionmaker() as session:
        return stored_for(session, beat.host, beat.base_report_id)
