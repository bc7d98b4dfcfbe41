"""Judge a host and store the result: the one place verdicts are made for readers.

`judge_and_store` runs under the host's lock (`app/judging/transaction.py`), so two replicas
never judge one host at once. It reads the stored judged rows, reuses their (pair, test)
verdicts unless a sweep arrived since they were judged (only a sweep changes them), else
carries each key's stored state on with the new results (`judge.py`, `pair_tests.py`), and
has `write.py` store only what changed, each object keeping its `since` while its verdict
holds.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.judging.judge import Prior, judge_host_now
from peerwatch.app.judging.unchanged import iso, nothing_changed
from peerwatch.app.judging.write import store
from peerwatch.app.queries.health import StoredRows, stored_rows, tests_from_rows
from peerwatch.app.records.health import HostHealth
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.judged import JudgedHost
from peerwatch.probes.report import TestName


def judge_and_store(session: Session, settings: Settings, row: Host, now: datetime,
                    may_skip: bool = False, reseed: bool = False) -> HostHealth | None:
    """Judge `row` at `now` and store it (the caller commits). Returns what was stored, or,
    with `may_skip`, None when nothing judged has changed (only `judged_at` moves; the
    rules' side of that decision is the caller's: the alerting engine takes the one-SELECT
    fast path of `unchanged.still_judged` before it gets here).
    `reseed` (an operator's re-judgement): judge the (pair, test) verdicts from history."""
    if may_skip and not reseed:
        top = session.get(JudgedHost, row.id)
        if top is not None and nothing_changed(row, top.verdict, top.stale, top.facts, now,
                                               settings.stale_after_s):
            top.judged_at = now
            return None
    previous = stored_rows(session, row.id)
    health = judge_host_now(session, settings, row, now, prior_of(previous, row, reseed))
    store(session, health, previous, now)
    return health


def prior_of(previous: StoredRows, row: Host, reseed: bool = False) -> Prior:
    """What the stored judgement knew that the new results alone do not say."""
    top_row = previous["host"].get(())
    facts: dict[str, Any] = top_row["facts"] if top_row else {}
    reuse = (top_row is not None and not reseed
             and facts.get("last_sweep_at") == iso(row.last_sweep_at))
    tests = previous["test"]
    return Prior(
        tests=tests_from_rows(tests) if reuse else None,
        states={(r["src"], r["dst"], TestName(r["test"])): r["state"]
                for r in tests.values()} if reuse else {},
        stored_tests=tests, judged_report=facts.get("judged_report"), reseed=reseed,
        link_facts={key: r["facts"] for key, r in previous["link"].items()},
        links_down={key for key, r in previous["link"].items() if r["verdict"] == Verdict.DOWN},
        pair_facts={key: r["facts"] for key, r in previous["pair"].items() if r["facts"]})
