"""A transfer test kind is one row of `probes/test_kinds.py`: a throw-away kind declared there
at test time (no file edited) is measured by the simulated probe, validated, stored and judged
by the server against its row's expectation, listed by GET /api/v1/tests and carried to the
dashboard, whose scripts keep no list of kinds of their own. Each step fails if its place
keeps its own list or chain instead of reading the table."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.judged import JudgedTest
from peerwatch.probes import test_kinds
from peerwatch.probes.report import Report, TestName, Unit, declared_tests
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from peerwatch.probes.test_kinds import Cost, Expect, Sim, TestKind
from tests.app.conftest import probe_headers

FRONTEND = Path(__file__).resolve().parents[2] / "frontend"
LINKS, LINK_BPS = 18, 26.562e9  # the h200x2 preset's pair: NV18 at NVLink 4's rate
THROWAWAY = TestKind(
    "zz_push", "pair", Unit.BYTES_PER_SECOND, Cost(256 << 20, copies=2, samples=2),
    Expect("copy", nvlink=0.5, pcie=0.4), Sim("copy", calibrated_as="ce_write"),
    "a throw-away kind a test declares", label="throw-away")


@pytest.fixture
def zz(monkeypatch: pytest.MonkeyPatch) -> TestName:
    monkeypatch.setattr(test_kinds, "TEST_KINDS", (*test_kinds.TEST_KINDS, THROWAWAY))
    return TestName(THROWAWAY.name)


def _simulated_sweep(test: TestName) -> Report:
    fabric = SimulatedFabric("h200x2", seed=1)
    return build_report(fabric, options=SweepOptions(tests=(TestName.CE_WRITE, test)))


def test_the_simulator_measures_a_declared_kind(zz: TestName) -> None:
    assert zz in declared_tests() and zz in SweepOptions().tests
    report = Report.model_validate_json(_simulated_sweep(zz).model_dump_json())
    ours = {(r.src, r.dst): r for r in report.results if r.test is zz}
    ce = {(r.src, r.dst): r for r in report.results if r.test is TestName.CE_WRITE}
    assert set(ours) == {(0, 1), (1, 0)} and not report.errors
    for pair, r in ours.items():
        assert r.unit is Unit.BYTES_PER_SECOND and r.error is None and r.copies == 2
        assert r.value == pytest.approx(ce[pair].value, rel=0.05)  # calibrated as ce_write


def test_the_server_judges_and_lists_a_declared_kind(zz: TestName, client: TestClient,
                                                     settings: Settings) -> None:
    r = client.post("/api/v1/reports", content=_simulated_sweep(zz).model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    engine = make_engine(settings)
    try:
        with engine.connect() as conn:
            judged = conn.execute(select(JudgedTest.src, JudgedTest.dst, JudgedTest.verdict,
                                         JudgedTest.expected)
                                  .where(JudgedTest.test == zz.value)).all()
    finally:
        engine.dispose()
    assert sorted((s, d) for s, d, _, _ in judged) == [(0, 1), (1, 0)]
    for _, _, verdict, expected in judged:
        assert verdict == "healthy"
        assert expected == pytest.approx(LINKS * LINK_BPS * 0.5, rel=0.01)  # its row's rule
    listed = {t["name"]: t for t in client.get("/api/v1/tests").json()["tests"]}
    assert listed[zz.value] == {"name": zz.value, "scope": "pair", "unit": "B/s",
                                "about": THROWAWAY.about, "label": "throw-away"}


def test_the_dashboard_draws_its_catalogue_from_the_table(zz: TestName,
                                                          client: TestClient) -> None:
    meta = re.search(r'<meta name="peerwatch-tests" content="([^"]*)">', client.get("/").text)
    assert meta is not None
    assert zz.value in {t["name"] for t in json.loads(unescape(meta.group(1)))}
    names = "|".join(t.value for t in TestName)
    listed = re.compile(rf"""["'`]({names})["'`]|\b({names})\s*:""")
    scripts = [p for p in FRONTEND.rglob("*.js") if "vendor" not in p.parts]
    assert len(scripts) > 30, scripts  # every module of every folder, not one level
    for script in sorted(scripts):
        code = "\n".join(line for line in script.read_text().splitlines()
                         if not line.lstrip().startswith(("//", "/*", "*")))
        assert not listed.search(code), f"{script.relative_to(FRONTEND)} names a test kind"
