"""Assemble every verdict of one host from the database, with the pure judges of
`app/analysis/`. Read-only; nothing is cached, so every replica answers the same."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.analysis.fabric_expect import unused_by_design
from app.analysis.fabric_health import (
    GpuFacts,
    GpuJudgement,
    HostJudgement,
    LinkJudgement,
    judge_gpu,
    judge_host,
    judge_link,
)
from app.analysis.fabric_state import judge_host_fabric
from app.analysis.health import (
    PairJudgement,
    Sample,
    TestJudgement,
    Thresholds,
    judge_pair,
    judge_test,
)
from app.analysis.rates import rate_per_s
from app.analysis.text import fmt_duration
from app.config import Settings
from app.models import GpuSample, Host, LinkSample
from app.queries.common import PairKey, baseline_ref, baselines_of, get_host, pair_samples
from app.queries.page_holds import fabric_manager_of
from app.schemas import Verdict
from app.services.fabric_state import HostFabric, load_fabric
from probes.report import utcnow

COUNTERS = ("tx_bytes", "rx_bytes", "replay", "recovery", "crc_flit", "crc_data", "ecc_data")


@dataclass
class HostHealth:
    """Everything judged about one host. `judgement` carries the GPU/link/pair verdicts."""

    host: Host
    fabric: HostFabric
    judgement: HostJudgement
    tests: dict[PairKey, TestJudgement] = field(default_factory=dict)
    samples: dict[PairKey, list[Sample]] = field(default_factory=dict)
    stale: bool = False
    generated_at: datetime = field(default_factory=utcnow)

    @property
    def gpus(self) -> tuple[GpuJudgement, ...]:
        return self.judgement.gpus


def link_rates(session: Session, host_id: int,
               since: datetime) -> dict[tuple[int, int], dict[str, float | None]]:
    """Growth per second of every counter of every link since `since`."""
    cols = [getattr(LinkSample, c) for c in COUNTERS]
    rows = session.execute(
        select(LinkSample.gpu, LinkSample.link, LinkSample.at, *cols)
        .where(LinkSample.host_id == host_id, LinkSample.at >= since)
        .order_by(LinkSample.at, LinkSample.id))
    series: dict[tuple[int, int], list[tuple]] = defaultdict(list)
    for gpu, link, at, *values in rows:
        series[(gpu, link)].append((at, *values))
    return {key: {c: rate_per_s([(p[0], p[i + 1]) for p in points])
                  for i, c in enumerate(COUNTERS)}
            for key, points in series.items()}


def pcie_replay_rates(session: Session, host_id: int, since: datetime) -> dict[int, float | None]:
    rows = session.execute(
        select(GpuSample.gpu, GpuSample.at, GpuSample.pcie_replay)
        .where(GpuSample.host_id == host_id, GpuSample.at >= since)
        .order_by(GpuSample.at, GpuSample.id))
    series: dict[int, list[tuple[datetime, int | None]]] = defaultdict(list)
    for gpu, at, replay in rows:
        series[gpu].append((at, replay))
    return {gpu: rate_per_s(points) for gpu, points in series.items()}


def _judge_tests(fabric: HostFabric, samples: dict[PairKey, list[Sample]],
                 baselines: dict, th: Thresholds) -> dict[PairKey, TestJudgement]:
    tests = sorted({k[2] for k in samples}, key=lambda t: t.value)
    keys = set(samples) | {(s, d, t) for (s, d) in fabric.pairs for t in tests}
    return {
        (s, d, t): judge_test(s, d, t, samples.get((s, d, t), []), fabric.expectation(t, s, d),
                              baseline_ref(baselines.get((s, d, t))), th)
        for (s, d, t) in sorted(keys, key=lambda k: (k[0], k[1], k[2].value))
    }


def _judge_pairs(fabric: HostFabric,
                 tests: dict[PairKey, TestJudgement]) -> list[PairJudgement]:
    by_pair: dict[tuple[int, int], list[TestJudgement]] = defaultdict(list)
    for (s, d, _), j in tests.items():
        by_pair[(s, d)].append(j)
    for pair in fabric.pairs:
        by_pair.setdefault(pair, [])
    return [judge_pair(s, d, js, fabric.pairs.get((s, d)))
            for (s, d), js in sorted(by_pair.items())]


def _judge_gpus(session: Session, fabric: HostFabric, links: list[LinkJudgement],
                pairs: list[PairJudgement], since: datetime) -> list[GpuJudgement]:
    replays = pcie_replay_rates(session, fabric.host.id, since)
    out = []
    for gpu in sorted(set(fabric.gpus) | set(fabric.missing_gpus)):
        facts = GpuFacts(info=fabric.gpus.get(gpu), ports=fabric.links_of(gpu),
                         pcie_replay_per_s=replays.get(gpu))
        out.append(judge_gpu(gpu, facts, [j for j in links if j.gpu == gpu],
                             [p for p in pairs if gpu in (p.src, p.dst)]))
    return out


def host_health(session: Session, settings: Settings, host: str | Host,
                now: datetime | None = None) -> HostHealth:
    """Every verdict of `host` (a name or a Host row), judged now from the stored history."""
    row = get_host(session, host) if isinstance(host, str) else host
    now = now or utcnow()
    th = Thresholds.from_settings(settings)
    fabric = load_fabric(session, row)
    newest = row.last_sweep_at or row.last_report_at or now
    lookback = max(settings.health_lookback_s, 2 * settings.degraded_sustain_s)
    samples = pair_samples(session, row.id, newest - timedelta(seconds=lookback))
    tests = _judge_tests(fabric, samples, baselines_of(session, row.id), th)
    pairs = _judge_pairs(fabric, tests)
    counters_since = (row.last_report_at or now) - timedelta(seconds=settings.link_rate_window_s)
    rates = link_rates(session, row.id, counters_since)
    ports = {g: fabric.links_of(g) for g in fabric.gpus}
    unused = unused_by_design(fabric.gpus, ports)  # ports a SKU leaves unwired (12 of 18)
    links = [judge_link(p, rates.get((p.gpu, p.link), {}), th, (p.gpu, p.link) in unused)
             for p in fabric.nvlinks]
    gpus = _judge_gpus(session, fabric, links, pairs, counters_since)
    age = (now - row.last_report_at).total_seconds() if row.last_report_at else None
    stale = age is None or age > settings.stale_after_s
    stale_for = (fmt_duration(age) if age is not None else "ever") if stale else None
    fabric_verdict = judge_host_fabric(row.name, fabric.gpus, ports, pairs,
                                       fabric_manager_of(session, row))
    judgement = judge_host(row.name, gpus, links, pairs, stale_for, fabric_verdict)
    return HostHealth(row, fabric, judgement, tests, samples, stale, now)


def gpu_health(session: Session, settings: Settings, host: str) -> list[GpuJudgement]:
    """Per-GPU verdicts of `host` with reasons (GPUs missing from the inventory included)."""
    return list(host_health(session, settings, host).gpus)


def healthy_gpus(session: Session, settings: Settings,
                 host: str) -> tuple[list[int], dict[int, str]]:
    """(indexes of healthy GPUs, {other GPU: why it is not healthy}) for `host`."""
    gpus = gpu_health(session, settings, host)
    good = [g.gpu for g in gpus if g.verdict is Verdict.HEALTHY]
    return good, {g.gpu: g.reason for g in gpus if g.verdict is not Verdict.HEALTHY}
