"""GET /api/v1/hosts/{host}/events: a host's Xid/SXid events with the catalog's meaning, for
the host page's timeline and the event marks on its charts (frontend/panels/host_events.js)."""

from __future__ import annotations

from fastapi import APIRouter

from peerwatch.app.api.deps import HostPath, SessionDep
from peerwatch.app.queries.events import host_events
from peerwatch.app.routes.hosts import Since, Until
from peerwatch.app.schemas.events import HostEventsResponse
from peerwatch.probes.report import utcnow

router = APIRouter(prefix="/api/v1/hosts", tags=["hosts"])


@router.get("/{host}/events", response_model=HostEventsResponse,
            summary="Xid/SXid events of a host, with the catalog's meaning")
def get_events(host: HostPath, session: SessionDep, since: Since = None,
               until: Until = None) -> HostEventsResponse:
    return HostEventsResponse.model_validate(host_events(session, host, since, until, utcnow()))
