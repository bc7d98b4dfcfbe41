"""The newest measurement of every ordered pair for one test, judged."""

from __future__ import annotations

from sqlalchemy.orm import Session

from app.config import Settings
from app.queries.common import NotFound, PairKey, baselines_of
from app.queries.health import HostHealth, host_health
from app.schemas import MatrixCell, MatrixResponse
from probes.report import TestName, unit_of


def _cell(health: HostHealth, key: PairKey, baselines: dict) -> MatrixCell:
    src, dst, test = key
    judged = health.tests[key]
    expect = health.fabric.expectation(test, src, dst)
    latest = judged.latest
    base = baselines.get(key)
    return MatrixCell(
        src=src, dst=dst, verdict=judged.verdict, reason=judged.reason,
        value=latest.value if latest else None,
        expected=expect.value if expect else None,
        expected_basis=expect.basis if expect else None,
        ratio=judged.ratio_expected, baseline=base.value if base else None,
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
    judged), while `value` is the newest sample of any kind. Raises `NotFound` for an
    unknown host or test name, or a test never measured on this host.
    """
    try:
        test = TestName(test)
    except ValueError:
        raise NotFound("test", test) from None
    if test is TestName.ALLREDUCE:
        raise NotFound("pair test", test.value)
    health = host_health(session, settings, host)
    keys = sorted(k for k in health.tests if k[2] is test)
    if not any(health.tests[k].latest for k in keys):
        raise NotFound("test", test.value, where=health.host.name)
    baselines = baselines_of(session, health.host.id)
    gpus = sorted(set(health.fabric.gpus) | {k[0] for k in keys} | {k[1] for k in keys})
    return MatrixResponse(host=health.host.name, test=test, unit=unit_of(test), gpus=gpus,
                          cells=[_cell(health, k, baselines) for k in keys])
