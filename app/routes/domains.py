"""Read API for rack-scale NVLink domains (GB200 NVL72): hosts grouped by cluster UUID and
clique, each domain's roll-up verdict with its reason, and its trays x GPUs.

An unknown domain id answers 404 naming it (the `NotFound` handler in `app.main`).
See docs/domains.md.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from peerwatch.app.api.deps import SessionDep
from peerwatch.app.queries.domains import domain_detail, domain_summaries
from peerwatch.app.schemas.domains import DomainDetail, DomainsResponse
from peerwatch.probes.report import utcnow

router = APIRouter(prefix="/api/v1/domains", tags=["domains"])


@router.get("", response_model=DomainsResponse,
            summary="Every NVLink domain (cluster UUID) with its cliques and roll-up verdict")
def list_domains(session: SessionDep) -> DomainsResponse:
    return DomainsResponse(generated_at=utcnow(), domains=domain_summaries(session))


@router.get("/{domain_id}", response_model=DomainDetail,
            summary="One NVLink domain: trays x GPUs with fabric state and verdicts",
            responses={404: {"description": "Unknown domain (named in `detail`)."}})
def get_domain(
    session: SessionDep,
    domain_id: Annotated[str, Path(max_length=64, description="Cluster UUID (32 hex digits; "
                                                              "dashes allowed).")],
) -> DomainDetail:
    return domain_detail(session, domain_id)
