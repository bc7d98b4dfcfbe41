"""`/hosts/{host}/health`: the stored judged state in the API's shape, with since when."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from peerwatch.app.analysis.health import TestJudgement
from peerwatch.app.queries.busy import busy_fields
from peerwatch.app.records.health import HostHealth
from peerwatch.app.schemas.health import (
    GpuHealth,
    GpuTestHealth,
    HealthResponse,
    LinkChange,
    LinkHealth,
    PairHealth,
    TestHealth,
)


def link_changes(facts: dict[str, Any]) -> list[LinkChange]:
    """A port's stored state changes (app/analysis/flaps.py `state_changes`), oldest first."""
    return [LinkChange(at=datetime.fromisoformat(at), state=state)
            for at, state in facts.get("changes", []) if state in ("down", "up")]


def gpu_tests(h: HostHealth, gpu: int) -> list[GpuTestHealth]:
    """The GPU's per-GPU tests, stored on the diagonal (src = dst = the GPU)."""
    mine: list[TestJudgement] = sorted(
        (t for (s, d, _), t in h.tests.items() if s == d == gpu), key=lambda t: t.test.value)
    return [GpuTestHealth(
        test=t.test, verdict=t.verdict, reason=t.reason,
        since=h.since.get(("test", gpu, gpu, t.test.value)),
        value=t.latest.value if t.latest else None, expected=t.expected,
        expected_basis=t.expected_basis, ratio_expected=t.ratio_expected, baseline=t.baseline,
        ratio_baseline=t.ratio_baseline, low_since=t.low_since,
        error=t.latest.error if t.latest else None,
        measured_at=t.latest.at if t.latest else None) for t in mine]


def explained_fields(h: HostHealth, src: int, dst: int) -> dict[str, Any]:
    """The pair's attribution and page hold as stored (`PairExplained`): for /health pairs
    and matrix cells alike."""
    pair = h.pair(src, dst)
    return {"explained_by": pair.explained_by if pair else None,
            "cause": pair.cause if pair else None,
            "waits_for": h.pair_facts.get((src, dst), {}).get("waits_for")}


def health_view(h: HostHealth) -> HealthResponse:
    j, since = h.judgement, h.since
    return HealthResponse(
        host=h.host.name, verdict=j.verdict, reason=j.reason, since=since.get(("host",)),
        generated_at=h.generated_at, stale=h.stale, **busy_fields(h.host, h.generated_at),
        gpus=[GpuHealth(gpu=g.gpu, verdict=g.verdict, reason=g.reason,
                        since=since.get(("gpu", g.gpu)), tests=gpu_tests(h, g.gpu))
              for g in j.gpus],
        links=[LinkHealth(gpu=x.gpu, link=x.link, verdict=x.verdict, reason=x.reason,
                          since=since.get(("link", x.gpu, x.link)),
                          changes=link_changes(h.link_facts.get((x.gpu, x.link), {})))
               for x in j.links],
        pairs=[PairHealth(
            src=p.src, dst=p.dst, verdict=p.verdict, reason=p.reason,
            since=since.get(("pair", p.src, p.dst)), **explained_fields(h, p.src, p.dst),
            tests=[TestHealth(test=t.test, verdict=t.verdict, reason=t.reason,
                              since=since.get(("test", t.src, t.dst, t.test.value)),
                              ratio_expected=t.ratio_expected, ratio_baseline=t.ratio_baseline,
                              low_since=t.low_since) for t in p.tests]) for p in j.pairs],
    )
