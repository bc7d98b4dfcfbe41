"""The newest measurement of every ordered pair for one test, with its stored verdict."""

from __future__ import annotations

from sqlalchemy.orm import Session

from peerwatch.app.analysis.health import CONFOUNDED
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.queries.common import NotFound
from peerwatch.app.queries.health import host_health
from peerwatch.app.queries.health_view import explained_fields
from peerwatch.app.records.health import HostHealth
from peerwatch.app.records.keys import PairKey
from peerwatch.app.runtime.config import Settings
from peerwatch.app.schemas.matrix import MatrixCell, MatrixResponse
from peerwatch.probes.report import TestName, test_scope, unit_of


def _shown(health: HostHealth, key: PairKey) -> tuple[Verdict, str]:
    """The cell's stored test verdict, or its pair's where the pair cannot be trusted (its
    GPU's fabric not ready, P2P lost, links down: `analysis/attribution.py`) and the test
    alone reads healthy: a cell is never healthier than the pair it measures."""
    judged = health.tests[key]
    pair = health.pair(key[0], key[1])
    if (judged.verdict is Verdict.HEALTHY and pair is not None and pair.cause is not None
            and pair.verdict is not Verdict.HEALTHY):
        return pair.verdict, f"not trusted: {pair.cause}; {judged.reason}"
    if judged.verdict is Verdict.HEALTHY and pair is not None \
            and pair.verdict is Verdict.UNKNOWN and CONFOUNDED in pair.reason:
        return pair.verdict, f"{pair.reason} (this test alone: {judged.reason})"
    return judged.verdict, judged.reason


def _cell(health: HostHealth, key: PairKey) -> MatrixCell:
    src, dst, test = key
    judged = health.tests[key]
    latest = judged.latest
    verdict, reason = _shown(health, key)
    return MatrixCell(
        src=src, dst=dst, verdict=verdict, reason=reason,
        since=health.since.get(("test", src, dst, test.value)),
        **explained_fields(health, src, dst),
        value=latest.value if latest else None,
        expected=judged.expected, expected_basis=judged.expected_basis,
        ratio=judged.ratio_expected, baseline=judged.baseline,
        baseline_ratio=judged.ratio_baseline,
        contended=latest.contended if latest else False,
        foreign_bytes=latest.foreign_bytes if latest else 0,
        error=latest.error if latest else None,
        measured_at=latest.at if latest else None,
    )


def latest_matrix(session: Session, settings: Settings, host: str,
                  test: TestName | str) -> MatrixResponse:
    """One cell per ordered GPU pair: newest value (None if it failed), expected value and
    basis, ratio, baseline, contention, verdict and reason for `test` on `host`.

    `ratio`/`baseline_ratio` belong to the newest *uncontended* success (what the verdict
    judged), while `value` is the newest sample of any kind. A known host with no sweep
    judged yet answers no cells (`judged_at` says how current that is). Raises `NotFound` for
    an unknown host or test name, or a test its judged sweeps never measured.
    """
    try:
        test = TestName(test)
    except ValueError:
        raise NotFound("test", test) from None
    if test_scope(test) != "pair":  # per GPU: the health answer's gpus
        raise NotFound("pair test", test.value)
    health = host_health(session, settings, host)
    keys = sorted(k for k in health.tests if k[2] is test)
    if not any(health.tests[k].latest for k in keys):
        if _not_swept_yet(health):  # its first sweep's judgement is on its way: no cells yet
            return MatrixResponse(host=health.host.name, test=test, unit=unit_of(test),
                                  gpus=sorted(health.fabric.gpus), cells=[],
                                  judged_at=health.generated_at)
        raise NotFound("test", test.value, where=health.host.name)
    gpus = sorted(set(health.fabric.gpus) | {k[0] for k in keys} | {k[1] for k in keys})
    return MatrixResponse(host=health.host.name, test=test, unit=unit_of(test), gpus=gpus,
                          cells=[_cell(health, k) for k in keys], judged_at=health.generated_at)


def _not_swept_yet(health: HostHealth) -> bool:
    """No sweep judged yet: none stored, or the newest judgement is from before it."""
    if health.generated_at is None or health.host.last_sweep_at is None:
        return True
    return not any(t.latest for t in health.tests.values())
