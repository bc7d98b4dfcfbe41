"""Judge one host from its stored state, its new results and its inventory, with the pure
judges of `app/analysis/` and `pair_tests.py`. The writer side of "judge once": it runs when
something changes (after a report is ingested, in the periodic evaluation) and
`app/judging/store.py` stores what it finds; readers never call it.

Only a sweep changes the (pair, test) verdicts, so a judgement without one reuses those the
last one stored (`tests=...`) and judges only links, GPUs, pairs and the host again; one
after a sweep carries each key's stored state on with the sweep's results alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from peerwatch.app.analysis.attribution import (
    BAD,
    Attribution,
    PatternFault,
    by_pattern,
    pair_facts,
    trust,
    untrusted_causes,
)
from peerwatch.app.analysis.fabric_expect import unused_by_design
from peerwatch.app.analysis.fabric_health import (
    GpuFacts,
    GpuJudgement,
    LinkJudgement,
    judge_gpu,
    judge_host,
    judge_link,
)
from peerwatch.app.analysis.fabric_state import judge_host_fabric
from peerwatch.app.analysis.flaps import downs_now, flapping, state_changes
from peerwatch.app.analysis.fleet_peers import flag_gpus, flag_pairs, worst_checks
from peerwatch.app.analysis.gpu_health import (
    DriverFinding,
    driver_facts,
    driver_findings,
    with_driver_verdicts,
)
from peerwatch.app.analysis.health import PairJudgement, TestJudgement, judge_pair, pair_label
from peerwatch.app.analysis.jobs import with_fault_jobs, with_holders, with_job_notes
from peerwatch.app.analysis.nic_health import NicLimits, judge_nics
from peerwatch.app.analysis.off_bus import off_bus_gpus
from peerwatch.app.analysis.pair_faults import fault_facts
from peerwatch.app.analysis.pattern_wait import bad_from, hold_facts, without_held
from peerwatch.app.analysis.switch_fold import REDUCED, folded_gpus
from peerwatch.app.analysis.text import fmt_duration
from peerwatch.app.analysis.throttle import (
    explain_pairs,
    explain_tests,
    throttled_facts,
    with_throttle_verdicts,
)
from peerwatch.app.analysis.throttle import explaining as throttle_explains
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.analysis.xid_attribution import EventAttribution, explain_by_events
from peerwatch.app.analysis.xid_judge import EventFinding, judge_events
from peerwatch.app.judging.events import apply_to_gpus, apply_to_links
from peerwatch.app.judging.key_rules import rules_of
from peerwatch.app.judging.load import Loaded, load_host
from peerwatch.app.judging.pair_tests import judge_tests
from peerwatch.app.records.fabric import HostFabric
from peerwatch.app.records.health import HostHealth
from peerwatch.app.records.keys import PairKey
from peerwatch.app.runtime.config import Settings
from peerwatch.app.services.fleet_peers import checks_against
from peerwatch.app.store.tables.inventory import Host, last_heard_at
from peerwatch.probes.report import TestName
from peerwatch.probes.test_kinds import kind_of


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


def _attribute(fabric: HostFabric, pairs: list[PairJudgement], events: list[EventFinding],
               starts: dict[tuple[int, int], datetime], switches: Mapping[int, str]
               ) -> tuple[Attribution, EventAttribution]:
    """The pairs attributed to the object at fault: an untrusted GPU, then an Xid one end
    logged while the pair was bad, then the pattern (`analysis/attribution.py`,
    `analysis/xid_attribution.py`)."""
    ports = {g: fabric.links_of(g) for g in fabric.gpus}
    plain = judge_host_fabric(fabric.host.name, fabric.gpus, ports, (), None,
                              had=fabric.ports_had(), switches=switches)
    gone = {**{g: None for g in off_bus_gpus(events)}, **fabric.missing_gpus}
    causes = {**_recovery_causes(fabric), **untrusted_causes(plain.gpus, gone)}
    trusted = trust(pairs, causes)
    by_events = explain_by_events(trusted, events, starts)
    return by_pattern(by_events.pairs), by_events


def _recovery_causes(fabric: HostFabric) -> dict[int, str]:
    """GPU -> why its pairs cannot be trusted where its driver asks for a recovery action
    (DRAIN_P2P: its peer-to-peer fabric must not be used), however well they measured."""
    return {gpu: f"has driver recovery action {info.driver.recovery_action.upper()} pending"
            for gpu, info in fabric.gpus.items() if info.driver is not None
            and info.driver.recovery_action not in (None, "none")}


def _bad_starts(pairs: list[PairJudgement], prior: Prior) -> dict[tuple[int, int], datetime]:
    """When each bad pair's trouble began, its stored start kept (`pattern_wait.bad_from`)."""
    return {(p.src, p.dst): s for p in pairs if p.verdict in BAD
            and (s := bad_from(p, prior.pair_facts.get((p.src, p.dst)))) is not None}


def _judge_gpus(settings: Settings, fabric: HostFabric, replays: dict[int, float | None],
                links: list[LinkJudgement], pairs: list[PairJudgement],
                tests: dict[PairKey, TestJudgement],
                pattern: Mapping[int, PatternFault],
                by_event: Mapping[int, PatternFault],
                switches: Mapping[int, str]) -> list[GpuJudgement]:
    own: dict[int, list[TestJudgement]] = defaultdict(list)  # each GPU's tests, by name
    for (s, d, t), j in sorted(tests.items(), key=lambda kv: kv[0][2]):  # StrEnum: by name
        if s == d and not _joint_failure(t, j):
            own[s].append(j)
    out = []
    had = fabric.ports_had()
    for gpu in sorted(set(fabric.gpus) | set(fabric.missing_gpus)):
        facts = GpuFacts(info=fabric.gpus.get(gpu), ports=fabric.links_of(gpu),
                         pcie_replay_per_s=replays.get(gpu),
                         pcie_check_generation=settings.pcie_check_generation,
                         tests=tuple(own.get(gpu, ())),
                         had=had.get(gpu, 0), pattern=pattern.get(gpu),
                         event=by_event.get(gpu), switch=switches.get(gpu))
        out.append(judge_gpu(gpu, facts, [j for j in links if j.gpu == gpu],
                             [p for p in pairs if gpu in (p.src, p.dst)]))
    return out


def _joint_failure(test: TestName, j: TestJudgement) -> bool:
    """A failed joint test (all-to-all): one GPU hangs or fails it on every GPU, so its
    failure is no GPU's own; ProbeFailing pages it and the pair tests find the GPU."""
    return kind_of(test).joint and j.verdict is Verdict.DOWN


def _still_reduced(gpus: list[GpuJudgement], first: dict[int, str]) -> list[GpuJudgement]:
    """A GPU offered at reduced bandwidth (kind `reduced`, `switch_fold.py`) stays so only
    while nothing else (an Xid, a throttle, its fleet peers) has added to its reason."""
    return [replace(g, fabric=tuple(k for k in g.fabric if k != REDUCED))
            if REDUCED in g.fabric and g.reason != first.get(g.gpu) else g for g in gpus]


def _unknown_without_gpu(fabric: HostFabric, tests: dict[PairKey, TestJudgement],
                         off_bus: Mapping[int, object]) -> dict[PairKey, TestJudgement]:
    """A pair with a GPU missing from the newest inventory, or one that logged Xid 79
    (fallen off the bus, `off_bus.py`) while still listed, is unknown, however healthy its
    samples from before the GPU vanished were."""
    gone = {g: "is missing from the newest inventory" for g in fabric.missing_gpus}
    gone.update({g: "fell off the bus (Xid 79)" for g in off_bus if g not in gone})
    if not gone:
        return tests
    out = {}
    for key, t in tests.items():
        missing = [g for g in (t.src, t.dst) if g in gone]
        out[key] = t if not missing else replace(
            t, verdict=Verdict.UNKNOWN, low_since=None,
            reason=f"{pair_label(t.src, t.dst, t.test)} not judged: GPU{missing[0]} "
                   f"{gone[missing[0]]}")
    return out



def _driver_findings(fabric: HostFabric, aer: dict[int, dict[str, float | None]],
                     settings: Settings) -> dict[int, list[DriverFinding]]:
    """GPU -> what its driver's reads say (recovery action, ECC, row remap, AER rates)."""
    out = {}
    for gpu, info in fabric.gpus.items():
        found = driver_findings(info.driver, aer.get(gpu, {}),
                                settings.thresholds.error_rate_per_s)
        if found:
            out[gpu] = found
    return out


@dataclass
class Prior:
    """What the last stored judgement knew that the history alone does not say."""

    tests: dict[PairKey, TestJudgement] | None = None  # to reuse: no sweep since
    states: dict[PairKey, bytes] = field(default_factory=dict)  # ... and their state
    stored_tests: dict[tuple, dict[str, Any]] = field(default_factory=dict)  # to go on from
    judged_report: int | None = None  # the newest report the stored tests were judged with
    reseed: bool = False  # judge the tests from history (an operator's re-judgement)
    link_facts: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    links_down: set[tuple[int, int]] = field(default_factory=set)
    pair_facts: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)


def _judge_links(settings: Settings, fabric: HostFabric,
                 rates: dict[tuple[int, int], dict[str, float | None]], now: datetime,
                 prior: Prior) -> tuple[list[LinkJudgement], dict[tuple[int, int], dict]]:
    """Every NVLink port from its state and error rates, flapping ports degraded; with the
    facts to store for the next judgement (when each port went down, and its last changes
    between down and up: the link-state history the charts mark)."""
    th = settings.thresholds
    ports = {g: fabric.links_of(g) for g in fabric.gpus}
    unused = unused_by_design(fabric.gpus, ports)  # ports a SKU leaves unwired (12 of 18)
    links, facts = [], {}
    seen_at = fabric.host.last_report_at or now  # a change is dated by the report showing it
    for p in fabric.nvlinks:
        key = (p.gpu, p.link)
        j = judge_link(p, rates.get(key, {}), th, key in unused)
        known = prior.link_facts.get(key, {})
        seen = [datetime.fromisoformat(t) for t in known.get("downs", [])]
        was_down, is_down = key in prior.links_down, j.verdict is Verdict.DOWN
        downs = downs_now(seen, was_down, is_down, now, settings.link_flap_window_s)
        links.append(flapping(j, downs, settings.link_flap_downs, settings.link_flap_window_s))
        changes = state_changes(known.get("changes", []), was_down, is_down, seen_at)
        facts[key] = {**({"downs": [t.isoformat() for t in downs]} if downs else {}),
                      **({"changes": changes} if changes else {})}
    return links, facts


def judge_host_now(session: Session, settings: Settings, row: Host, now: datetime,
                   prior: Prior | None = None) -> HostHealth:
    """Every verdict of `row` at `now`, given what the last judgement knew (`prior`): read
    what it needs (`load.py`), then judge it (`judge_loaded`, pure)."""
    prior = prior or Prior()
    loaded = load_host(session, settings, row, now, prior.stored_tests, prior.judged_report,
                       reuse=prior.tests is not None, reseed=prior.reseed)
    return judge_loaded(loaded, settings, now, prior)


def _tests_of(loaded: Loaded, settings: Settings, now: datetime, prior: Prior
              ) -> tuple[dict[PairKey, TestJudgement], dict[PairKey, bytes], int | None]:
    """(every (pair, test) verdict, each key's state to store, the newest report judged):
    the stored ones reused when no sweep came since, else carried on from the new results."""
    if loaded.tests is None:
        assert prior.tests is not None
        return prior.tests, prior.states, prior.judged_report
    row = loaded.fabric.host
    newest = row.last_sweep_at or row.last_report_at or now
    tests, states = judge_tests(loaded.tests, loaded.fabric, loaded.expectations,
                                rules_of(settings), newest)
    tests = with_job_notes(tests, loaded.jobs)  # "...; low since 02:10 UTC, during job 4711"
    return tests, states, loaded.tests.judged_report


def judge_loaded(loaded: Loaded, settings: Settings, now: datetime, prior: Prior
                 ) -> HostHealth:
    """Every verdict of the host at `now` from what `load_host` read: no SQL."""
    fabric = loaded.fabric
    row = fabric.host
    tests, states, judged_report = _tests_of(loaded, settings, now, prior)
    events = judge_events(loaded.events, now)  # Xid/SXid faults worsen their object
    off_bus = off_bus_gpus(events)
    tests = _unknown_without_gpu(fabric, tests, off_bus)
    throttled = throttle_explains(loaded.throttles, settings.throttle_sweeps_most,
                                  settings.throttle_sweeps_of)  # a slow pair on a throttled
    tests = explain_tests(tests, throttled)  # GPU is not the fabric's fault (throttle.py)
    checks = checks_against(loaded.peer_groups, loaded.peer_stats, tests, settings)
    flagged_pairs, peers = flag_pairs(_judge_pairs(fabric, tests), checks,
                                      settings.fleet_peer_floor, settings.fleet_peer_min_hosts)
    starts = _bad_starts(flagged_pairs, prior)
    ports = {g: fabric.links_of(g) for g in fabric.gpus}
    switches = folded_gpus(ports, events)  # ports lost with a faulty NVSwitch
    attributed, by_events = _attribute(fabric, flagged_pairs, events, starts, switches)
    pairs = explain_pairs(list(attributed.pairs), throttled)
    pairs = with_fault_jobs(pairs, loaded.jobs, starts)  # "...; during job 4711"
    holds = hold_facts(pairs, prior.pair_facts, now, settings.pattern_wait_s)
    held_pairs = {k for k, f in holds.items() if "waits_for" in f}
    seen_by_gpus = without_held(pairs, held_pairs)
    links, link_facts = _judge_links(settings, fabric, loaded.link_rates, now, prior)
    links = apply_to_links(links, events)
    judged = _judge_gpus(settings, fabric, loaded.pcie_replays, links, seen_by_gpus,
                         tests, attributed.pattern, by_events.gpus, switches)
    gpus = flag_gpus(judged, checks, settings.fleet_peer_min_hosts)
    gpus = apply_to_gpus(gpus, events)
    found = _driver_findings(fabric, loaded.aer_rates, settings)
    gpus = with_driver_verdicts(gpus, found)  # the driver's own verdicts (gpu_health.py)
    gpus = with_throttle_verdicts(gpus, loaded.throttles, settings.throttle_sweeps_most,
                                  settings.throttle_sweeps_of)
    gpus = _still_reduced(gpus, {g.gpu: g.reason for g in judged})
    gpus = with_holders(gpus, loaded.jobs, row.last_report_at)  # "...; held by job 81252"
    links = with_holders(links, loaded.jobs, row.last_report_at)
    heard = last_heard_at(row)
    age = (now - heard).total_seconds() if heard else None
    stale = age is None or age > settings.stale_after_s
    stale_for = (fmt_duration(age) if age is not None else "ever") if stale else None
    fabric_verdict = judge_host_fabric(row.name, fabric.gpus, ports, seen_by_gpus,
                                       loaded.fabric_manager, had=fabric.ports_had(),
                                       switches=switches)
    judgement = judge_host(row.name, gpus, links, pairs, stale_for, fabric_verdict)
    if peers.below and judgement.verdict is Verdict.DEGRADED:
        rest = judgement.reason.removeprefix(f"{row.name}: ")
        judgement = replace(judgement, reason=f"{row.name}: {peers.text}; {rest}")
    health = HostHealth(row, fabric, judgement, tests, stale, now)
    health.link_facts = link_facts
    flagged = {key: {"peer": c.facts()} for key, c in worst_checks(checks).items()
               if c.flagged}  # only these: a drifting median rewrites no row
    health.pair_facts = {(s, d): f for (s, d), f in flagged.items() if s != d}
    for p in pairs:  # what explains each pair, kept with its row for every reader
        if facts := pair_facts(p):
            health.pair_facts[(p.src, p.dst)] = {**health.pair_facts.get((p.src, p.dst), {}),
                                                 **facts}
    for key, facts in holds.items():  # a pair page held while a GPU pattern forms
        health.pair_facts[key] = {**health.pair_facts.get(key, {}), **facts}
    for key in by_events.explained & starts.keys():  # its Xid window keeps its start
        health.pair_facts[key] = {**health.pair_facts.get(key, {}),
                                  "bad_from": starts[key].isoformat()}
    # a pair fault's kind, on its rows; a held pair is none yet (its pattern may be a GPU's)
    for key, kind in fault_facts(p for p in pairs if (p.src, p.dst) not in held_pairs).items():
        health.pair_facts[key] = {**health.pair_facts.get(key, {}), **kind}
    health.gpu_facts = {s: f for (s, d), f in flagged.items() if s == d}
    for gpu, held in throttled_facts(loaded.throttles, settings.throttle_sweeps_most,
                                     settings.throttle_sweeps_of).items():
        health.gpu_facts[gpu] = {**health.gpu_facts.get(gpu, {}), "throttle": held}
    for gpu, findings in found.items():
        health.gpu_facts[gpu] = {**health.gpu_facts.get(gpu, {}),
                                 "driver": driver_facts(findings)}
    health.peers = {**peers.facts(), **loaded.peer_basis}
    health.nics = [j.as_dict() for j in judge_nics(loaded.nic_readings, loaded.nic_types,
                                                     NicLimits())]
    health.test_states, health.judged_report = states, judged_report
    health.events = events
    return health
