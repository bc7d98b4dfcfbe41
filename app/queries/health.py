"""A host's judged state as stored: every verdict (host, GPUs, links, pairs, pair tests) with
its reason, since when, and the figures behind it.

The state is written by `app/judging/store.py` when something changes (after a report
is ingested, in the periodic evaluation); every reader (the API, the dashboard, the scheduler,
the alert rules, `/metrics`) reads it here and never judges again, so a read costs a few
indexed selects whatever the history holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.fabric_health import GpuJudgement, HostJudgement, LinkJudgement
from peerwatch.app.analysis.health import PairJudgement, Sample, TestJudgement
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.queries.common import get_host
from peerwatch.app.queries.fabric import load_fabric
from peerwatch.app.records.fabric import HostFabric
from peerwatch.app.records.health import HostHealth
from peerwatch.app.records.keys import PairKey
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.tables.inventory import Host
from peerwatch.app.store.tables.judged import (
    JudgedGpu,
    JudgedHost,
    JudgedLink,
    JudgedPair,
    JudgedTest,
)
from peerwatch.probes.report import TestName

# Each kind of judged object: its table and the columns that name one object on a host.
TABLES: dict[str, Any] = {"host": JudgedHost, "gpu": JudgedGpu, "link": JudgedLink,
                          "pair": JudgedPair, "test": JudgedTest}
KEYS: dict[str, tuple[str, ...]] = {"host": (), "gpu": ("gpu",), "link": ("gpu", "link"),
                                    "pair": ("src", "dst"), "test": ("src", "dst", "test")}
StoredRows = dict[str, dict[tuple, dict[str, Any]]]  # kind -> object key -> column values
NOT_JUDGED = "not judged yet"


# Each kind's read of one host's rows, built once: building a select costs more than
# sending it (five of them for every judgement)
_STORED = {kind: select(model.__table__).where(model.__table__.c.host_id == bindparam("host"))
           for kind, model in TABLES.items()}


def stored_rows(session: Session, host_id: int) -> StoredRows:
    """Every stored judged row of one host, by kind and object key."""
    out: StoredRows = {}
    for kind, query in _STORED.items():
        result = session.execute(query, {"host": host_id})
        names = list(result.keys())
        key = _key_of([names.index(k) for k in KEYS[kind]])
        # rows fetched at once, as tuples: a RowMapping per row costs more than the row
        out[kind] = {key(r): dict(zip(names, r, strict=True)) for r in result.all()}
    return out


def _key_of(indexes: list[int]) -> Callable[[Sequence[Any]], tuple]:
    """A row's object key, the values at `indexes`, as a tuple: by one C call (an
    `itemgetter` of two or more), not a generator per row (~416 rows of an 8-GPU host)."""
    if len(indexes) > 1:
        return itemgetter(*indexes)
    if indexes:
        i = indexes[0]
        return lambda r: (r[i],)
    return lambda r: ()


def test_from_row(r: dict[str, Any]) -> TestJudgement:
    latest = None
    if r["latest_at"] is not None:
        latest = Sample(at=r["latest_at"], value=r["latest_value"],
                        contended=r["latest_contended"], error=r["latest_error"],
                        foreign_bytes=r["latest_foreign_bytes"])
    return TestJudgement(
        Verdict(r["verdict"]), r["reason"], r["src"], r["dst"], TestName(r["test"]),
        latest=latest, value=r["value"], value_at=r["value_at"],
        ratio_expected=r["ratio_expected"],
        ratio_baseline=r["ratio_baseline"], low_since=r["low_since"], expected=r["expected"],
        expected_basis=r["expected_basis"], baseline=r["baseline"])


def tests_from_rows(rows: dict[tuple, dict[str, Any]]) -> dict[PairKey, TestJudgement]:
    judged = (test_from_row(r) for _, r in sorted(rows.items()))
    return {(t.src, t.dst, t.test): t for t in judged}


def health_from_rows(row: Host, fabric: HostFabric, rows: StoredRows) -> HostHealth:
    """The stored state as the judges' own values (the shape every reader works with)."""
    tests = tests_from_rows(rows["test"])
    by_pair: dict[tuple[int, int], list[TestJudgement]] = {}
    for (s, d, _), t in tests.items():
        by_pair.setdefault((s, d), []).append(t)
    pairs = tuple(PairJudgement(Verdict(r["verdict"]), r["reason"], s, d,
                                tuple(sorted(by_pair.get((s, d), []), key=lambda t: t.test)),
                                r["facts"].get("explained_by"), r["facts"].get("cause"),
                                bool(r["facts"].get("by_event")))
                  for (s, d), r in sorted(rows["pair"].items()))
    links = tuple(LinkJudgement(Verdict(r["verdict"]), r["reason"], g, k)
                  for (g, k), r in sorted(rows["link"].items()))
    gpus = tuple(GpuJudgement(Verdict(r["verdict"]), r["reason"], g,
                              tuple(r["facts"].get("fabric", ())))
                 for (g,), r in sorted(rows["gpu"].items()))
    top = rows["host"][()]
    judgement = HostJudgement(Verdict(top["verdict"]), top["reason"], gpus, links, pairs,
                              tuple(top["facts"].get("fabric", ())))
    since = {(kind, *key): r["since"] for kind, objs in rows.items() for key, r in objs.items()}
    health = HostHealth(row, fabric, judgement, tests, top["stale"], top["judged_at"], since)
    health.link_facts = {key: r["facts"] for key, r in rows["link"].items() if r["facts"]}
    health.pair_facts = {key: r["facts"] for key, r in rows["pair"].items() if r["facts"]}
    health.gpu_facts = {g: kept for (g,), r in rows["gpu"].items()
                        if (kept := {k: r["facts"][k] for k in ("peer", "throttle", "driver")
                                     if r["facts"].get(k)})}
    health.peers = top["facts"].get("peers") or {}
    health.nics = top["facts"].get("nics") or []
    return health


def unjudged(row: Host, fabric: HostFabric) -> HostHealth:
    """A host whose first judgement has not been stored yet (it is on its way)."""
    return HostHealth(row, fabric, HostJudgement(Verdict.UNKNOWN, f"{row.name}: {NOT_JUDGED}"),
                      stale=True)


def host_health(session: Session, settings: Settings, host: str | Host) -> HostHealth:
    """Every stored verdict of `host` (a name or a Host row); `NotFound` for an unknown name."""
    row = get_host(session, host) if isinstance(host, str) else host
    fabric = load_fabric(session, row)
    rows = stored_rows(session, row.id)
    if () not in rows["host"]:
        return unjudged(row, fabric)
    return health_from_rows(row, fabric, rows)


def gpu_health(session: Session, settings: Settings, host: str) -> list[GpuJudgement]:
    """Per-GPU verdicts of `host` with reasons (GPUs missing from the inventory included)."""
    return list(host_health(session, settings, host).gpus)


def healthy_gpus(session: Session, settings: Settings,
                 host: str) -> tuple[list[int], dict[int, str]]:
    """(indexes of healthy GPUs, {other GPU: why it is not healthy}) for `host`."""
    gpus = gpu_health(session, settings, host)
    good = [g.gpu for g in gpus if g.verdict is Verdict.HEALTHY]
    return good, {g.gpu: g.reason for g in gpus if g.verdict is not Verdict.HEALTHY}
