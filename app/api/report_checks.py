"""Checks the server makes on a report beyond what the wire models check on their own.

The wire models (`probes/report.py`) judge each value; these judge the report as a whole
against what the database can store: duplicate GPUs, links or pairs (which would break a
unique constraint half-way through an ingest), samples naming GPUs the inventory lacks, and
clocks far in the future (which would pin "latest" to a time that never comes), more results
than the inventory allows (each (src, dst, test) at most once; counter rows at most four
samples of each NVLink port the inventory lists) and a `report_id` reused for a
different report (`ReportConflict`; `app/ingest/digest.py` tells one), and cross-host
results (`peer_host`) at most once per (test, src, peer_host, dst) and within
`MAX_CROSS_HOST_RESULTS` (stored as host pairs: docs/network.md). Each problem
is returned in pydantic's error shape, with the field path, so the 422 names the field.
Here, in the HTTP frame, because the body readers (`wire_body.py`) refuse an oversized
report before validating it and a job snapshot (`app/services/snapshots.py`) is checked
as a report's inventory is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

from peerwatch.app.runtime.credentials import Identity
from peerwatch.probes.report import (
    MAX_GPUS,
    CounterSample,
    Inventory,
    Report,
    test_scope,
)
from peerwatch.probes.test_kinds import kinds

MAX_CLOCK_AHEAD = timedelta(hours=1)
INT64_MAX = 2**63 - 1  # BIGINT: the widest integer column either database has


def _error(loc: tuple[Any, ...], msg: str, kind: str = "value_error") -> dict[str, Any]:
    return {"type": kind, "loc": loc, "msg": msg}


def _duplicates(keys: Iterable[Any], where: tuple[Any, ...], what: str) -> Iterator[dict[str, Any]]:
    seen: set[Any] = set()
    for i, key in enumerate(keys):
        if key in seen:
            yield _error((*where, i), f"duplicate {what} {key}")
        seen.add(key)


def _unknown_gpus(indexes: Iterable[int], known: set[int], loc: tuple[Any, ...],
                  what: str) -> Iterator[dict[str, Any]]:
    missing = sorted(set(indexes) - known)
    if missing:
        yield _error(loc, f"{what} names GPU(s) {missing} not in inventory")


def _times(report: Report) -> Iterator[tuple[tuple[Any, ...], datetime]]:
    yield ("started_at",), report.started_at
    yield ("finished_at",), report.finished_at
    for i, sample in enumerate(report.counters):
        yield ("counters", i, "at"), sample.at
    for i, result in enumerate(report.results):
        if result.started_at is not None:
            yield ("results", i, "started_at"), result.started_at
    for i, event in enumerate(report.events):
        yield ("events", i, "at"), event.at


def _check_times(report: Report, now: datetime) -> Iterator[dict[str, Any]]:
    for loc, at in _times(report):
        if at.tzinfo is None:
            yield _error(loc, "timestamp has no timezone: send UTC, e.g. 2026-11-30T10:00:00Z",
                         "timezone_aware")
        elif at > now + MAX_CLOCK_AHEAD:
            yield _error(loc, f"{at.isoformat()} is more than {MAX_CLOCK_AHEAD} ahead of the "
                              "server's clock")


def result_limit(gpus: int) -> int:
    """Most results a report on `gpus` GPUs can carry: each pair test once per ordered pair,
    plus each GPU-set test (all-reduce) once per GPU count (2..gpus), plus each per-GPU test
    once per GPU: counted over the declared kinds (`probes/test_kinds.py`)."""
    scopes = Counter(k.scope for k in kinds())
    return (gpus * (gpus - 1) * scopes["pair"] + max(gpus - 1, 0) * scopes["set"]
            + gpus * scopes["gpu"])


# Counter rows per report: one per NVLink port the inventory lists, for at most this many
# samples (a probe sends 1 or 2: before and after its sweep).
COUNTER_SAMPLES_PER_PORT = 4


def _check_counter_rows(report: Report) -> Iterator[dict[str, Any]]:
    ports = len(report.inventory.nvlinks)
    for i, sample in enumerate(report.counters):
        if len(sample.links) > ports:
            yield _error(("counters", i, "links"), f"{len(sample.links)} link counters, but "
                         f"the inventory lists {ports} NVLink ports (one row per port)")
            return
    rows = sum(len(sample.links) for sample in report.counters)
    if rows > COUNTER_SAMPLES_PER_PORT * ports:
        yield _error(("counters",), f"{rows} link counter rows, but {ports} ports allow at "
                     f"most {COUNTER_SAMPLES_PER_PORT * ports} ({COUNTER_SAMPLES_PER_PORT} "
                     "samples of each)")


# Cross-host results per report: a pair job's rank sends a few (one per test); a probe of
# an NVL72 tray at most one per local GPU x peer GPU x test of a tray's neighbours.
MAX_CROSS_HOST_RESULTS = 1024


def _result_key(result: Any) -> tuple[Any, ...]:
    if result.peer_host is not None:
        return (result.test.value, result.src, result.peer_host, result.dst)
    if test_scope(result.test) == "set":
        return (result.test.value, tuple(sorted(result.gpus)))
    return (result.test.value, result.src, result.dst)


def _check_results(report: Report) -> Iterator[dict[str, Any]]:
    limit = result_limit(len(report.inventory.gpus))
    cross = sum(r.peer_host is not None for r in report.results)
    if cross > MAX_CROSS_HOST_RESULTS:
        yield _error(("results",), f"{cross} cross-host results, at most "
                     f"{MAX_CROSS_HOST_RESULTS} per report")
        return
    if len(report.results) - cross > limit:
        yield _error(("results",), f"{len(report.results)} results, but a host of "
                     f"{len(report.inventory.gpus)} GPUs allows at most {limit} (each pair "
                     "test once per ordered pair, each per-GPU test once per GPU)")
        return
    seen: set[tuple[Any, ...]] = set()
    for i, result in enumerate(report.results):
        if result.peer_host is not None and result.peer_host == report.host.hostname:
            yield _error(("results", i, "peer_host"), f"peer_host {result.peer_host!r} is "
                         "the reporting host: a cross-host result names another host")
            continue
        key = _result_key(result)
        if key in seen:
            yield _error(("results", i), f"duplicate result for (test, src, dst) {key}: "
                         "send each test of each pair once per report")
        seen.add(key)


class ReportConflict(Exception):
    """A report_id already stored with a different body (answered 409)."""


class ForeignHost(Exception):
    """A report about a host its credential does not speak for (answered 403). Raised in an
    ingest worker process too: its one argument, the message, pickles."""


def check_speaker(host: str, speaker: Identity | None) -> None:
    """Refuse a report or snapshot about a host its sender's credential does not name
    (None: stored by the server itself, the demo's backfill and the tests' fixtures)."""
    if speaker is not None and not speaker.speaks_for(host):
        raise ForeignHost(f"{speaker.name} may not report for host {host.lower()[:80]!r}")


def check_report(report: Report, now: datetime) -> list[dict[str, Any]]:
    """Every coherence problem of `report`, as pydantic-style errors (empty when fine)."""
    errors: list[dict[str, Any]] = list(_check_times(report, now))
    errors += _check_results(report)
    errors += _check_counter_rows(report)
    errors += inventory_problems(report.inventory)
    errors += _duplicates(((j.gpu, j.job) for j in report.jobs), ("jobs",), "(gpu, job)")
    known = {g.index for g in report.inventory.gpus}
    for i, sample in enumerate(report.counters):
        errors += sample_problems(sample, known, ("counters", i))
    return errors


def inventory_problems(inv: Inventory, loc: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Duplicate GPUs, ports or pairs, and ports or pairs naming GPUs the inventory lacks
    (also used for job snapshots, `app/services/snapshots.py`)."""
    where = (*loc, "inventory")
    errors = list(_duplicates((g.index for g in inv.gpus), (*where, "gpus"), "GPU index"))
    errors += _duplicates(((p.gpu, p.link) for p in inv.nvlinks), (*where, "nvlinks"),
                          "(gpu, link)")
    errors += _duplicates(((p.src, p.dst) for p in inv.pairs), (*where, "pairs"), "(src, dst)")
    known = {g.index for g in inv.gpus}
    # one set test for the whole list first: a healthy inventory (every report) names only
    # GPUs it lists, and only a list that does not is walked to name the items
    if not {p.gpu for p in inv.nvlinks} <= known:
        for i, port in enumerate(inv.nvlinks):
            errors += _unknown_gpus([port.gpu], known, (*where, "nvlinks", i, "gpu"), "nvlink")
    if not {g for p in inv.pairs for g in (p.src, p.dst)} <= known:
        for i, pair in enumerate(inv.pairs):
            errors += _unknown_gpus([pair.src, pair.dst], known, (*where, "pairs", i), "pair")
    return errors


def sample_problems(sample: CounterSample, known: set[int],
                    loc: tuple[Any, ...]) -> list[dict[str, Any]]:
    """Duplicate links in a counter sample, and rows naming GPUs the inventory lacks."""
    errors = list(_duplicates(((c.gpu, c.link) for c in sample.links), (*loc, "links"),
                              "(gpu, link)"))
    errors += _unknown_gpus([c.gpu for c in sample.links], known, (*loc, "links"), "links")
    errors += _unknown_gpus(sample.pcie_replay, known, (*loc, "pcie_replay"), "pcie_replay")
    errors += _unknown_gpus([a.gpu for a in sample.aer], known, (*loc, "aer"), "aer")
    errors += _unknown_gpus([a.gpu for a in sample.activity], known, (*loc, "activity"),
                            "activity")
    return errors


def oversized_lists(data: Any) -> list[dict[str, Any]]:
    """A host past `MAX_GPUS`, or more results than its GPUs allow, found in the raw JSON
    before the wire model validates every item (validating every item of a huge inventory
    costs far more than refusing it for its length)."""
    inventory = data.get("inventory") if isinstance(data, dict) else None
    gpus = inventory.get("gpus") if isinstance(inventory, dict) else None
    if not isinstance(gpus, list):
        return []
    results = data.get("results")
    return too_many_items(len(gpus), len(results) if isinstance(results, list) else None)


def too_many_items(gpus: int, results: int | None) -> list[dict[str, Any]]:
    """`oversized_lists` from the lengths alone: also asked of a report validated straight
    from its bytes (`app.api.wire_body`), whose model bounds each list but not results by GPUs."""
    if gpus > MAX_GPUS:
        return [_error(("inventory", "gpus"), f"{gpus} GPUs, but a host has at most "
                       f"{MAX_GPUS} (MAX_GPUS)", "too_long")]
    if results is not None and results > (limit := result_limit(gpus)):
        return [_error(("results",), f"{results} results, but a host of {gpus} "
                       f"GPUs allows at most {limit}", "too_long")]
    return []


def oversized_integers(data: Any) -> list[dict[str, Any]]:
    """Integers in the raw JSON that no BIGINT column can hold (a counter gone haywire);
    iterative, so a body nested as deep as the parser reads cannot overflow here."""
    found: list[dict[str, Any]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        node, loc = stack.pop()
        if isinstance(node, int) and not isinstance(node, bool) and abs(node) > INT64_MAX:
            found.append(_error(loc, f"integer {_shown(node)} does not fit in 64 bits",
                                "int_too_large"))
        elif isinstance(node, dict):
            stack.extend((value, (*loc, key)) for key, value in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((value, (*loc, i)) for i, value in reversed(list(enumerate(node))))
    return found


def _shown(number: int) -> str:
    """An integer as the error names it: a long one by its first digits and its length."""
    text = str(number)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text.lstrip('-'))} digits)"
