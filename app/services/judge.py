"""Judge one host from its stored history and inventory, with the pure judges of
`app/analysis/`. The writer side of "judge once": it runs when something changes (after a
report is ingested, in the periodic evaluation) and `app/services/judged_store.py` stores what
it finds; readers never call it.

Reading every pair's recent samples is most of a judgement's cost and only a sweep changes
them, so a judgement may reuse the (pair, test) verdicts stored by the last one
(`tests=...`) and judge only links, GPUs, pairs and the host again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from app.analysis.fabric_expect import unused_by_design
from app.analysis.fabric_health import (
    GpuFacts,
    GpuJudgement,
    LinkJudgement,
    judge_gpu,
    judge_host,
    judge_link,
)
from app.analysis.fabric_state import judge_host_fabric
from app.analysis.flaps import downs_now, flapping
from app.analysis.fleet_peers import flag_gpus, flag_pairs, worst_checks
from app.analysis.health import (
    BaselineRef,
    PairJudgement,
    Sample,
    TestJudgement,
    Thresholds,
    judge_pair,
    judge_test,
    pair_label,
)
from app.analysis.text import fmt_duration
from app.analysis.verdict import Verdict
from app.config import Settings
from app.models import Host
from app.queries.common import PairKey, baseline_refs, pair_samples
from app.queries.counters import link_rates, pcie_replay_rates
from app.queries.fabric import HostFabric, load_fabric
from app.queries.health import HostHealth
from app.queries.page_holds import fabric_manager_of
from app.services.fleet_peers import host_peer_checks
from probes.report import GPU_TESTS


def _judge_tests(fabric: HostFabric, samples: dict[PairKey, list[Sample]],
                 baselines: dict[PairKey, BaselineRef], th: Thresholds,
                 low_before: dict[PairKey, datetime]) -> dict[PairKey, TestJudgement]:
    """Every (pair, test) measured or expected; a per-GPU test is keyed (gpu, gpu, test)."""
    tests = sorted({k[2] for k in samples}, key=lambda t: t.value)
    keys = set(samples) | {(s, d, t) for (s, d) in fabric.pairs for t in tests
                           if t not in GPU_TESTS}
    keys |= {(g, g, t) for g in fabric.gpus for t in tests if t in GPU_TESTS}
    return {
        (s, d, t): judge_test(s, d, t, samples.get((s, d, t), []),
                              fabric.full_expectation(t, s, d),
                              baselines.get((s, d, t)), th,
                              low_before.get((s, d, t)))
        for (s, d, t) in sorted(keys, key=lambda k: (k[0], k[1], k[2].value))
    }


def _judge_pairs(fabric: HostFabric,
                 tests: dict[PairKey, TestJudgement]) -> list[PairJudgement]:
    by_pair: dict[tuple[int, int], list[TestJudgement]] = defaultdict(list)
    for (s, d, _), j in tests.items():
        if s != d:  # the diagonal holds the per-GPU tests, judged with their GPU
            by_pair[(s, d)].append(j)
    for pair in fabric.pairs:
        by_pair.setdefault(pair, [])
    return [judge_pair(s, d, js, fabric.pairs.get((s, d)))
            for (s, d), js in sorted(by_pair.items())]


def _judge_gpus(session: Session, settings: Settings, fabric: HostFabric,
                links: list[LinkJudgement], pairs: list[PairJudgement],
                tests: dict[PairKey, TestJudgement], since: datetime) -> list[GpuJudgement]:
    replays = pcie_replay_rates(session, fabric.host.id, since)
    out = []
    for gpu in sorted(set(fabric.gpus) | set(fabric.missing_gpus)):
        facts = GpuFacts(info=fabric.gpus.get(gpu), ports=fabric.links_of(gpu),
                         pcie_replay_per_s=replays.get(gpu),
                         pcie_check_generation=settings.pcie_check_generation,
                         tests=tuple(j for (s, d, _), j in sorted(
                             tests.items(), key=lambda kv: kv[0][2].value) if s == d == gpu))
        out.append(judge_gpu(gpu, facts, [j for j in links if j.gpu == gpu],
                             [p for p in pairs if gpu in (p.src, p.dst)]))
    return out


def judge_tests_from_history(session: Session, settings: Settings, row: Host,
                             fabric: HostFabric, now: datetime,
                             low_before: dict[PairKey, datetime] | None = None,
                             ) -> dict[PairKey, TestJudgement]:
    """Every (pair, test) verdict, from the samples of the look-back window; `low_before`:
    when each low run began as last judged (a run can be older than the window)."""
    newest = row.last_sweep_at or row.last_report_at or now
    lookback = max(settings.health_lookback_s, 2 * settings.degraded_sustain_s)
    samples = pair_samples(session, row.id, newest - timedelta(seconds=lookback))
    return _judge_tests(fabric, samples, baseline_refs(session, row.id),
                        settings.thresholds, low_before or {})


def _unknown_without_gpu(fabric: HostFabric, tests: dict[PairKey, TestJudgement]
                         ) -> dict[PairKey, TestJudgement]:
    """A pair with a GPU missing from the newest inventory is unknown, however healthy its
    samples from before the GPU vanished were."""
    gone = set(fabric.missing_gpus)
    if not gone:
        return tests
    out = {}
    for key, t in tests.items():
        missing = [g for g in (t.src, t.dst) if g in gone]
        out[key] = t if not missing else replace(
            t, verdict=Verdict.UNKNOWN, low_since=None,
            reason=f"{pair_label(t.src, t.dst, t.test)} not judged: GPU{missing[0]} is "
                   "missing from the newest inventory")
    return out


def last_heard_at(row: Host) -> datetime | None:
    """When the server last heard from this host's probe, by the server's own clock: its
    newest stored report, or a report it refused because it was busy (app/refusals.py)."""
    heard = row.last_received_at or row.last_report_at
    refused = row.last_refused_at
    if refused is not None and (heard is None or refused > heard):
        return refused
    return heard


@dataclass
class Prior:
    """What the last stored judgement knew that the history alone does not say."""

    tests: dict[PairKey, TestJudgement] | None = None  # to reuse: no sweep since
    low_before: dict[PairKey, datetime] = field(default_factory=dict)  # low runs' starts
    link_facts: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    links_down: set[tuple[int, int]] = field(default_factory=set)


def _judge_links(session: Session, settings: Settings, row: Host, fabric: HostFabric,
                 now: datetime, since: datetime,
                 prior: Prior) -> tuple[list[LinkJudgement], dict[tuple[int, int], dict]]:
    """Every NVLink port from its state and error rates, flapping ports degraded; with the
    facts to store for the next judgement (when each port went down)."""
    th = settings.thresholds
    rates = link_rates(session, row.id, since)
    ports = {g: fabric.links_of(g) for g in fabric.gpus}
    unused = unused_by_design(fabric.gpus, ports)  # ports a SKU leaves unwired (12 of 18)
    links, facts = [], {}
    for p in fabric.nvlinks:
        key = (p.gpu, p.link)
        j = judge_link(p, rates.get(key, {}), th, key in unused)
        seen = [datetime.fromisoformat(t) for t in prior.link_facts.get(key, {}).get("downs", [])]
        downs = downs_now(seen, key in prior.links_down, j.verdict is Verdict.DOWN, now,
                          settings.link_flap_window_s)
        links.append(flapping(j, downs, settings.link_flap_downs, settings.link_flap_window_s))
        facts[key] = {"downs": [t.isoformat() for t in downs]} if downs else {}
    return links, facts


def judge_host_now(session: Session, settings: Settings, row: Host, now: datetime,
                   prior: Prior | None = None) -> HostHealth:
    """Every verdict of `row` at `now`, given what the last judgement knew (`prior`)."""
    prior = prior or Prior()
    fabric = load_fabric(session, row)
    tests = prior.tests
    if tests is None:
        tests = judge_tests_from_history(session, settings, row, fabric, now, prior.low_before)
    tests = _unknown_without_gpu(fabric, tests)
    checks, basis = host_peer_checks(session, settings, row, fabric, tests)
    pairs, peers = flag_pairs(_judge_pairs(fabric, tests), checks, settings.fleet_peer_floor,
                              settings.fleet_peer_min_hosts)
    counters_since = (row.last_report_at or now) - timedelta(seconds=settings.link_rate_window_s)
    ports = {g: fabric.links_of(g) for g in fabric.gpus}
    links, link_facts = _judge_links(session, settings, row, fabric, now, counters_since, prior)
    gpus = flag_gpus(_judge_gpus(session, settings, fabric, links, pairs, tests, counters_since),
                     checks, settings.fleet_peer_min_hosts)
    heard = last_heard_at(row)
    age = (now - heard).total_seconds() if heard else None
    stale = age is None or age > settings.stale_after_s
    stale_for = (fmt_duration(age) if age is not None else "ever") if stale else None
    fabric_verdict = judge_host_fabric(row.name, fabric.gpus, ports, pairs,
                                       fabric_manager_of(session, row))
    judgement = judge_host(row.name, gpus, links, pairs, stale_for, fabric_verdict)
    if peers.below and judgement.verdict is Verdict.DEGRADED:
        rest = judgement.reason.removeprefix(f"{row.name}: ")
        judgement = replace(judgement, reason=f"{row.name}: {peers.text}; {rest}")
    health = HostHealth(row, fabric, judgement, tests, stale, now)
    health.link_facts = link_facts
    flagged = {key: {"peer": c.facts()} for key, c in worst_checks(checks).items()
               if c.flagged}  # only these: a drifting median rewrites no row
    health.pair_facts = {(s, d): f for (s, d), f in flagged.items() if s != d}
    health.gpu_facts = {s: f for (s, d), f in flagged.items() if s == d}
    health.peers = {**peers.facts(), **basis}
    return health
