"""GET /api/v1/hosts/{host}/gpus/series: per GPU, the SM clock, power and temperature sampled
around each sweep, for the host page's chart beside the bandwidth."""

from __future__ import annotations

from fastapi import APIRouter

from peerwatch.app.api.deps import HostPath, SessionDep
from peerwatch.app.queries.gpu_series import gpu_series
from peerwatch.app.routes.hosts import Since, Until
from peerwatch.app.schemas.gpu_series import GpuSeriesResponse
from peerwatch.probes.report import utcnow

router = APIRouter(prefix="/api/v1/hosts", tags=["hosts"])


@router.get("/{host}/gpus/series", response_model=GpuSeriesResponse,
            summary="Per GPU: SM clock, power and temperature over time")
def get_gpu_series(host: HostPath, session: SessionDep, since: Since = None,
                   until: Until = None) -> GpuSeriesResponse:
    return GpuSeriesResponse.model_validate(gpu_series(session, host, since, until, utcnow()))
