"""Read API for hosts: list, inventory, topology graph, matrix, series, link rates, health.

Unknown hosts, GPUs, links and tests answer 404 naming what was not found (the `NotFound`
handler in `app.main`); impossible parameters (a range that ends before it starts,
                                                         too many
buckets) answer 422.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.exceptions import RequestValidationError

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.analysis.clock import clock_note
from peerwatch.app.api.deps import HostPath, SessionDep, SettingsDep
from peerwatch.app.api.errors import query_unprocessable
from peerwatch.app.queries import host_health, host_summaries, latest_matrix
from peerwatch.app.queries.health_view import health_view
from peerwatch.app.queries.hosts import host_detail
from peerwatch.app.queries.link_series import link_series
from peerwatch.app.queries.series import pair_series
from peerwatch.app.queries.topology import host_topology
from peerwatch.app.schemas.health import HealthResponse
from peerwatch.app.schemas.hosts import HostDetail, HostsResponse
from peerwatch.app.schemas.matrix import MatrixResponse
from peerwatch.app.schemas.series import LinkSeriesResponse, SeriesResponse
from peerwatch.app.schemas.topology import TopologyResponse
from peerwatch.probes.report import MAX_GPUS, MAX_LINKS_PER_GPU, Timestamp, utcnow

router = APIRouter(prefix="/api/v1/hosts", tags=["hosts"])

TestParam = Annotated[str, Query(description="ce_write, ce_read, ce_bidir, sm_write, sm_read, "
                                             "latency or staged", examples=["ce_write"])]
Since = Annotated[Timestamp | None, Query(description="Start (ISO 8601); default: the "
                                                     "default range back from `until`.")]
Until = Annotated[Timestamp | None, Query(description="End (ISO 8601); default: now.")]
Step = Annotated[int | None, Query(ge=1, le=31 * 86_400, description="Bucket width in "
                                   "seconds; default: about 300 buckets over the range.")]

GpuQuery = Annotated[int | None, Query(ge=0, lt=MAX_GPUS, description="Only this GPU")]
LinkQuery = Annotated[int | None, Query(ge=0, lt=MAX_LINKS_PER_GPU, description="Only this link")]


def _unprocessable(exc: ValueError) -> RequestValidationError:
    return query_unprocessable(str(exc))


@router.get("", response_model=HostsResponse, summary="Every host with its health summary")
def list_hosts(request: Request, session: SessionDep) -> HostsResponse:
    limit = _skew_limit_s(request)
    hosts = [h.model_copy(update={"clock_note": clock_note(h.clock_skew_s, limit)})
             if not h.stale else h for h in host_summaries(session)]
    return HostsResponse(generated_at=utcnow(), hosts=hosts)


@router.get("/{host}", response_model=HostDetail, summary="A host's inventory")
def get_host_detail(request: Request, host: HostPath, session: SessionDep) -> HostDetail:
    detail = host_detail(session, host)
    if detail.stale:  # a stale host says so already; its last skew is history
        return detail
    return detail.model_copy(update={"clock_note": clock_note(detail.clock_skew_s,
                                                              _skew_limit_s(request))})


def _skew_limit_s(request: Request) -> float:
    """ProbeClockSkew's limit, as the judging service reads it (app/judging/service.py)."""
    alerting = getattr(request.app.state, "alerting_settings", None) or AlertingSettings()
    return float(alerting.clock_skew_warn_s)


@router.get("/{host}/topology", response_model=TopologyResponse,
            summary="GPUs, NVSwitch and CPU sockets as a graph with bandwidth and verdicts")
def get_topology(host: HostPath, session: SessionDep, settings: SettingsDep) -> TopologyResponse:
    return host_topology(session, settings, host)


@router.get("/{host}/matrix", response_model=MatrixResponse,
            summary="Newest value, expectation and verdict of every ordered pair")
def get_matrix(host: HostPath, session: SessionDep, settings: SettingsDep,
               test: TestParam = "ce_write") -> MatrixResponse:
    return latest_matrix(session, settings, host, test)


@router.get("/{host}/series", response_model=SeriesResponse,
            summary="Bucketed min/mean/max of one pair and test, with baseline and expected")
def get_series(host: HostPath, session: SessionDep, settings: SettingsDep,
               src: Annotated[int, Query(ge=0, lt=MAX_GPUS, description="Source GPU index")],
               dst: Annotated[int, Query(ge=0, lt=MAX_GPUS,
                                               description="Destination GPU index")],
               test: TestParam = "ce_write", since: Since = None, until: Until = None,
               step: Step = None) -> SeriesResponse:
    try:
        return pair_series(session, settings, host, src, dst, test, since, until, step)
    except ValueError as exc:
        raise _unprocessable(exc) from exc


@router.get("/{host}/links/series", response_model=LinkSeriesResponse,
            summary="Per-link throughput and error-counter rates over time")
def get_link_series(host: HostPath, session: SessionDep, since: Since = None, until: Until = None,
                    step: Step = None,
                    gpu: GpuQuery = None, link: LinkQuery = None,
                    ) -> LinkSeriesResponse:
    try:
        return link_series(session, host, since, until, step, gpu, link)
    except ValueError as exc:
        raise _unprocessable(exc) from exc


@router.get("/{host}/health", response_model=HealthResponse,
            summary="Verdicts for the host, each GPU, link and pair, with reasons and since when")
def get_health(host: HostPath, session: SessionDep, settings: SettingsDep) -> HealthResponse:
    return health_view(host_health(session, settings, host))
