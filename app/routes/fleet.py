"""Read API for the fleet as a whole: `GET /api/v1/fleet/peers`, each peer group's
distribution, the pairs far below it and the sibling-driver comparisons (docs/fleet-peers.md).

Reads the stored `fleet_peer_stats` and judged pairs only; an unknown `test` answers 422
naming the allowed values, an over-long `model` 422 naming the limit.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from peerwatch.app.api.deps import SessionDep, SettingsDep
from peerwatch.app.queries.fleet_peers import fleet_peers_response
from peerwatch.app.schemas.fleet import FleetPeersResponse
from peerwatch.probes.report import TestName, utcnow

router = APIRouter(prefix="/api/v1/fleet", tags=["fleet"])

ModelQuery = Annotated[str | None, Query(min_length=1, max_length=128,
                                         description="Only this GPU model (exact name)",
                                         examples=["NVIDIA H200"])]
TestQuery = Annotated[TestName | None, Query(description="Only this test")]


@router.get("/peers", response_model=FleetPeersResponse,
            summary="Peer groups (GPU model, topology, driver): distributions and gaps")
def fleet_peers(session: SessionDep, settings: SettingsDep, model: ModelQuery = None,
                test: TestQuery = None) -> FleetPeersResponse:
    return fleet_peers_response(session, settings, model, test, utcnow())
