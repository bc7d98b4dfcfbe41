"""`/hosts/{host}/health`: the stored judged state in the API's shape, with since when."""

from __future__ import annotations

from app.queries.health import HostHealth
from app.schemas import GpuHealth, HealthResponse, LinkHealth, PairHealth, TestHealth


def health_view(h: HostHealth) -> HealthResponse:
    j, since = h.judgement, h.since
    return HealthResponse(
        host=h.host.name, verdict=j.verdict, reason=j.reason, since=since.get(("host",)),
        generated_at=h.generated_at, stale=h.stale,
        gpus=[GpuHealth(gpu=g.gpu, verdict=g.verdict, reason=g.reason,
                        since=since.get(("gpu", g.gpu))) for g in j.gpus],
        links=[LinkHealth(gpu=x.gpu, link=x.link, verdict=x.verdict, reason=x.reason,
                          since=since.get(("link", x.gpu, x.link))) for x in j.links],
        pairs=[PairHealth(
            src=p.src, dst=p.dst, verdict=p.verdict, reason=p.reason,
            since=since.get(("pair", p.src, p.dst)),
            tests=[TestHealth(test=t.test, verdict=t.verdict, reason=t.reason,
                              since=since.get(("test", t.src, t.dst, t.test.value)),
                              ratio_expected=t.ratio_expected, ratio_baseline=t.ratio_baseline,
                              low_since=t.low_since) for t in p.tests]) for p in j.pairs],
    )
