"""Which job held each GPU, server side, on both backends: a simulated host whose mapping
directory names job 4711 while its pair GPU0->GPU1 slows down. The spans are stored with the
reports, the pair's low verdict names the job, its series lists it, and the job's page
(GET /api/v1/jobs/4711) lists the GPUs it held and what went wrong during it. Without a
mapping nothing is claimed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.ingest.rows import ingest
from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.retention import MaintenanceResult, prune
from peerwatch.app.store.tables.jobs import GpuJobSpan
from peerwatch.app.store.tables.judged import JudgedGpu, JudgedLink, JudgedTest
from peerwatch.probes.agent.job_mapping import with_jobs
from peerwatch.probes.report import Report, ReportKind
from peerwatch.probes.sim.faults import BandwidthFactor, LinksDown
from peerwatch.probes.sweep import build_report
from tests.app.alerting.conftest import _sessions
from tests.app.alerting.simhost import SimHost

JOB = "4711"


@dataclass
class MappedHost(SimHost):
    """A SimHost whose reports carry the jobs of a mapping directory, as the agent's do."""

    mapping: Path = Path("/nonexistent")

    def send(self, kind: ReportKind = ReportKind.INVENTORY) -> Report:
        report = build_report(self.fabric, kind, self.options, now=self.now)
        report = with_jobs(report, self.mapping, None)
        with self.sessions() as session:
            ingest(session, report, self.settings, self.now())
        return report

    def map_job(self, job: str, *gpus: int) -> None:
        self.mapping.mkdir(exist_ok=True)
        for g in gpus:
            (self.mapping / str(g)).write_text(f"{job}\n")

    def unmap(self) -> None:
        for f in self.mapping.iterdir():
            f.unlink()


@pytest.fixture
def sessions(settings: Settings) -> Iterator[sessionmaker[Session]]:
    yield from _sessions(settings)  # on both backends (`settings` of tests/app/conftest.py)


@pytest.fixture
def host(sessions: sessionmaker[Session], settings: Settings, tmp_path: Path) -> MappedHost:
    h = MappedHost(sessions, settings, mapping=tmp_path / "map")
    for _ in range(3):
        h.step(300, "sweep")  # a healthy history, before any job
    return h


def _slow_during_the_job(host: MappedHost) -> None:
    host.map_job(JOB, 0, 1)
    host.inject(BandwidthFactor(src=0, dst=1, factor=0.5))
    for i in range(36):  # 18 min: past every rule's `for`
        host.step(30, "sweep" if i % 10 == 9 else "inventory")


def spans(host: MappedHost) -> list[tuple[int, str, str]]:
    with host.sessions() as s:
        rows = s.scalars(select(GpuJobSpan).order_by(GpuJobSpan.gpu)).all()
        return [(r.gpu, r.job, r.source) for r in rows]


def test_no_mapping_claims_nothing(host: MappedHost) -> None:
    assert spans(host) == []
    with TestClient(create_app(host.settings)) as client:
        r = client.get("/api/v1/jobs/4711")
        assert r.status_code == 404 and "job '4711' not found" in r.text
        assert client.get("/api/v1/jobs/bad%20job").status_code == 422


def test_a_slow_pair_during_a_job_names_it_everywhere(host: MappedHost) -> None:
    mapped_from = host.now()
    _slow_during_the_job(host)
    assert spans(host) == [(0, JOB, "mapping_dir"), (1, JOB, "mapping_dir")]
    with host.sessions() as s:
        span = s.scalars(select(GpuJobSpan).where(GpuJobSpan.gpu == 0)).one()
        assert mapped_from <= span.first_seen <= mapped_from.replace(second=59)
        assert span.last_seen == host.now()
        low = s.scalars(select(JudgedTest).where(
            JudgedTest.src == 0, JudgedTest.dst == 1, JudgedTest.test == "ce_write")).one()
    assert low.verdict == "degraded", low.reason
    assert low.low_since is not None
    assert low.reason.endswith(f"; low since {low.low_since:%H:%M} UTC, during job {JOB}")
    host.unmap()  # the job ended: its span stays as it was
    host.step(30)
    with TestClient(create_app(host.settings)) as client:
        series = client.get("/api/v1/hosts/sim-a/series", params={
            "src": 0, "dst": 1, "test": "ce_write", "since": host.start.isoformat(),
            "until": host.now().isoformat()}).json()
        assert {(j["gpu"], j["job"]) for j in series["jobs"]} == {(0, JOB), (1, JOB)}
        page = client.get(f"/api/v1/jobs/{JOB}").json()
    assert page["hosts"] == ["sim-a"] and [h["gpu"] for h in page["held"]] == [0, 1]
    assert page["last_seen"] < host.now().isoformat().replace("+00:00", "Z")
    rules = {a["rule"] for a in page["alerts"]}
    assert rules and all(a["host"] == "sim-a" for a in page["alerts"]), page["alerts"]
    kinds = {(v["kind"], v["verdict"]) for v in page["verdicts"]}
    assert ("test", "degraded") in kinds and ("pair", "degraded") in kinds, kinds
    [test] = [v for v in page["verdicts"] if v["kind"] == "test"
              and v["key"] == {"src": 0, "dst": 1, "test": "ce_write"}]
    assert f"during job {JOB}" in test["reason"]


def test_a_job_on_other_gpus_is_not_blamed(host: MappedHost) -> None:
    host.map_job("5000", 1)  # on GPU1 only: the slow pair is GPU0->GPU1, so it is named
    host.step(30)
    host.unmap()
    host.step(30)  # job 5000 ended before the fault
    _slow_during_the_job(host)
    with host.sessions() as s:
        low = s.scalars(select(JudgedTest).where(
            JudgedTest.src == 0, JudgedTest.dst == 1, JudgedTest.test == "ce_write")).one()
    assert "5000" not in low.reason and f"during job {JOB}" in low.reason


def test_spans_are_kept_as_long_as_the_reports_then_pruned(host: MappedHost) -> None:
    host.map_job(JOB, 0)
    host.step(30)
    keep = host.settings.retention_rollup_s
    with host.sessions() as s:
        assert prune(s, host.settings, host.now() + timedelta(seconds=keep - 60),
                     MaintenanceResult())["gpu_jobs"] == 0
        assert prune(s, host.settings, host.now() + timedelta(seconds=keep + 60),
                     MaintenanceResult())["gpu_jobs"] == 1
        s.commit()
    assert spans(host) == []


def test_a_late_report_widens_the_span_backwards(host: MappedHost) -> None:
    host.map_job(JOB, 0)
    early = with_jobs(build_report(host.fabric, now=host.now), host.mapping, None)
    host.advance(600)
    late = with_jobs(build_report(host.fabric, now=host.now), host.mapping, None)
    for report in (late, early):  # the early one was spooled and arrives last
        with host.sessions() as s:
            ingest(s, report, host.settings, host.now())
    with host.sessions() as s:
        span = s.scalars(select(GpuJobSpan)).one()
    assert (span.first_seen, span.last_seen) == (early.started_at, late.finished_at)


def test_a_gpu_whose_links_went_down_names_the_job_holding_it(host: MappedHost) -> None:
    host.map_job("81252", 1)
    host.inject(LinksDown(gpu=1, count=2))
    for _ in range(4):
        host.step(30)
    with host.sessions() as s:
        gpu = s.scalars(select(JudgedGpu).where(JudgedGpu.gpu == 1)).one()
        other = s.scalars(select(JudgedGpu).where(JudgedGpu.gpu == 0)).one()
        link = s.scalars(select(JudgedLink).where(JudgedLink.gpu == 1,
                                                  JudgedLink.verdict == "down")).first()
    assert gpu.verdict in ("degraded", "down") and gpu.reason.endswith("; held by job 81252")
    assert link is not None and link.reason.endswith("; held by job 81252")
    assert "81252" not in other.reason
    host.unmap()
    host.step(30)  # the job ended: the GPU's reason no longer names it
    with host.sessions() as s:
        gpu = s.scalars(select(JudgedGpu).where(JudgedGpu.gpu == 1)).one()
    assert "81252" not in gpu.reason
