"""The probe worker against a REAL server (create_app on SQLite, uvicorn on a loopback port)
and a simulated fabric, on a fake clock: nothing lost, nothing doubled, faults stay local."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from peerwatch.probes.agent.outbox import Delivery
from peerwatch.probes.agent.runner import ProbeRuntime, open_runtime
from peerwatch.probes.agent.sender import Outcome
from peerwatch.probes.agent.spool import CORRUPT_SUFFIX, REJECTED_SUFFIX
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.report import Report, ReportKind, TestName, utcnow
from peerwatch.probes.sim.faults import BusyGpu, TransferHangs
from peerwatch.probes.sim.simulated import SimulatedFabric
from tests.probes.fakeclock import FakeClock
from tests.probes.live_server import TOKEN, free_port, live_server, server_settings, stored

Probe = tuple[ProbeRuntime, FakeClock, list[Report]]


@contextmanager
def probe(tmp_path: Path, url: str, preset: str = "h200x2", token: str = TOKEN,
          faults: tuple = (), **overrides) -> Iterator[Probe]:
    """A runtime on a fake clock whose built reports are recorded in a list."""
    clock = FakeClock()
    fabric = SimulatedFabric(preset, clock=clock, faults=faults, seed=5)
    options = dict(server_url=url, token=token, spool_dir=tmp_path / "spool",
                   inventory_interval_s=30, sweep_interval_s=120, sweep_jitter_s=10,
                   request_timeout_s=5)
    settings = ProbeSettings(**{**options, **overrides})
    built: list[Report] = []
    with open_runtime(settings, fabric=fabric, clock=clock, sleep=clock.sleep,
                      rng=random.Random(3)) as runtime:
        build = runtime.worker.build

        def recording(kind: ReportKind) -> Report:
            report = build(kind)
            built.append(report)
            return report

        runtime.worker.build = recording
        try:
            yield runtime, clock, built
        finally:
            fabric.close()


def test_server_down_then_up_loses_nothing_and_doubles_nothing(tmp_path: Path) -> None:
    port = free_port()
    settings = server_settings(tmp_path / "server")
    with probe(tmp_path, f"http://127.0.0.1:{port}",
               inventory_interval_s=60) as (runtime, clock, built):
        sent: list[Report] = []  # as delivered: the agent stamps its cost in after building
        stamp = runtime.worker._stamp
        runtime.worker._stamp = lambda report: sent.append(stamp(report)) or sent[-1]
        runtime.worker.run(until=clock.now + 300)  # nobody listens on the port
        assert len(built) >= 6 and len(runtime.outbox.spool) == len(built)
        assert {r.kind for r in built} == {ReportKind.INVENTORY, ReportKind.SWEEP}
        with live_server(settings, port=port):
            runtime.worker.run(until=clock.now + 400)  # backoff expires, the spool drains
            # A report the server has but whose answer was lost comes back from the spool:
            again = sent[0]  # the very same body: a different one would be a 409
            runtime.outbox.spool.put(again)
            assert runtime.outbox.replay() == 1
            answer = runtime.outbox.stats.last_answer
            assert answer and answer.status == 200  # "duplicate": stored before, unchanged
        db = stored(settings)
    assert len(runtime.outbox.spool) == 0
    # each report sent in full exactly once; the others went as heartbeats (nothing changed)
    assert sorted(db.report_ids) == sorted(r.report_id for r in sent)
    assert len(sent) < len(built) and runtime.worker.changes.heartbeats > 0
    assert db.measurements == sum(len(r.results) for r in built)


def test_full_spool_drops_oldest_and_the_next_report_says_how_many(tmp_path: Path) -> None:
    port = free_port()
    settings = server_settings(tmp_path / "server")
    # room for 9 of the ~19 KB inventory reports (each with its clocks sample and the
    # driver's health reads), not 10
    with probe(tmp_path, f"http://127.0.0.1:{port}", spool_max_bytes=175_000,
               sweep_interval_s=10_000, sweep_jitter_s=0) as (runtime, clock, built):
        runtime.worker.run_pass(ReportKind.INVENTORY)
        size = len(built[0].model_dump_json())
        for _ in range(9):
            runtime.worker.run_pass(ReportKind.INVENTORY)
        kept = len(runtime.outbox.spool)
        assert kept == 175_000 // size and runtime.outbox.spool.dropped() == 10 - kept
        with live_server(settings, port=port):
            clock.advance(400)
            report, submitted = runtime.worker.run_pass(ReportKind.INVENTORY)
        assert submitted and submitted.delivery is Delivery.DELIVERED and report
        db = stored(settings)
    assert sorted(db.report_ids) == sorted(r.report_id for r in built[10 - kept:])
    assert db.dropped[report.report_id] == 10 - kept
    assert runtime.outbox.spool.dropped() == 0


def test_corrupt_spool_file_is_set_aside_and_the_rest_delivered(tmp_path: Path,
                                                                  caplog) -> None:
    port = free_port()
    settings = server_settings(tmp_path / "server")
    with probe(tmp_path, f"http://127.0.0.1:{port}") as (runtime, clock, built):
        for _ in range(3):
            runtime.worker.run_pass(ReportKind.INVENTORY)
        spool = runtime.outbox.spool
        middle = spool.entries()[1]
        (spool.directory / middle.name).write_bytes(b"\x00garbage after a disk error")
        with live_server(settings, port=port):
            clock.advance(400)
            report, submitted = runtime.worker.run_pass(ReportKind.INVENTORY)
        db = stored(settings)
    assert (spool.directory / (middle.name + CORRUPT_SUFFIX)).exists()
    lost = built[1].report_id
    assert sorted(db.report_ids) == sorted(r.report_id for r in built if r.report_id != lost)
    assert report and db.dropped[report.report_id] == 1
    assert "not a valid report" in caplog.text


def test_wrong_token_is_logged_loudly_and_not_retried_forever(tmp_path: Path, caplog) -> None:
    settings = server_settings(tmp_path / "server")
    with live_server(settings) as server, \
            probe(tmp_path, server.url, token="not-the-token",
                  inventory_interval_s=60) as (runtime, clock, built):
        with caplog.at_level(logging.ERROR):
            runtime.worker.run(until=clock.now + 3600)
        attempts = runtime.outbox.stats.attempts
        db = stored(settings)
    assert len(built) >= 60
    assert attempts <= 3600 / runtime.settings.backoff_max_s + 2  # once per longest backoff
    assert runtime.outbox.stats.by_outcome == {Outcome.UNAUTHORIZED: attempts}
    assert "SERVER REFUSED THE PROBE (HTTP 403" in caplog.text
    assert "not a valid probe credential" in caplog.text  # the server's own words
    assert len(runtime.outbox.spool) == len(built) and db.report_ids == []  # kept, not lost


def test_rejected_report_is_set_aside_counted_and_never_retried(tmp_path: Path,
                                                                  caplog) -> None:
    settings = server_settings(tmp_path / "server")
    with live_server(settings) as server, probe(tmp_path, server.url) as (runtime, clock, built):
        skewed = runtime.worker.build
        runtime.worker.build = lambda kind: _hours_ahead(skewed(kind), 2)  # a clock gone wrong
        _, bad = runtime.worker.run_pass(ReportKind.INVENTORY)
        runtime.worker.build = skewed
        good, delivered = runtime.worker.run_pass(ReportKind.INVENTORY)
        attempts = runtime.outbox.stats.attempts
        db = stored(settings)
        aside = runtime.outbox.spool.set_aside_files()
    assert bad and bad.delivery is Delivery.SET_ASIDE and bad.answer and bad.answer.status == 422
    assert "ahead of the server's clock" in caplog.text
    assert [p.name.endswith(REJECTED_SUFFIX) for p in aside] == [True]
    assert delivered and delivered.delivery is Delivery.DELIVERED and attempts == 2
    assert good and db.report_ids == [good.report_id] and db.dropped[good.report_id] == 1


def _hours_ahead(report: Report, hours: float) -> Report:
    later = utcnow() + timedelta(hours=hours)
    return report.model_copy(update={"started_at": later, "finished_at": later})


def test_hung_transfer_fails_only_its_item(tmp_path: Path) -> None:
    settings = server_settings(tmp_path / "server")
    with live_server(settings) as server, probe(
            tmp_path, server.url, preset="mesh4", watchdog_timeout_s=0.3,
            faults=(TransferHangs(gpu=1, test=TestName.CE_READ),)) as (runtime, clock, built):
        started = time.monotonic()
        report, submitted = runtime.worker.run_pass(ReportKind.SWEEP)
        took = time.monotonic() - started
    assert report and submitted and submitted.delivery is Delivery.DELIVERED
    failed = [r for r in report.results if r.error]
    assert len(failed) == 1 and "within 0.3 s; abandoned" in (failed[0].error or "")
    assert failed[0].test is TestName.CE_READ and 1 in (failed[0].src, failed[0].dst)
    untouched = [r for r in report.results if 1 not in (r.src, r.dst, *r.gpus)]
    assert untouched and all(r.value is not None for r in untouched)
    assert any(s.gpu == 1 and "hung" in s.reason for s in report.cost.skipped)
    assert took < 5  # one watchdog period, not one per test


def test_busy_gpu_is_skipped_unless_forced(tmp_path: Path) -> None:
    settings = server_settings(tmp_path / "server")
    with live_server(settings) as server:
        for force in (False, True):
            with probe(tmp_path / str(force), server.url, preset="mesh4", force=force,
                       faults=(BusyGpu(gpu=2),)) as (runtime, clock, built):
                report, submitted = runtime.worker.run_pass(ReportKind.SWEEP)
            assert report and submitted and submitted.delivery is Delivery.DELIVERED
            touched = {g for r in report.results for g in (r.src, r.dst, *r.gpus)}
            if force:
                assert 2 in touched and not report.cost.skipped
            else:
                assert 2 not in touched and {0, 1, 3} <= touched
                assert [(s.gpu, "busy" in s.reason) for s in report.cost.skipped] == [(2, True)]
    assert len(stored(settings).report_ids) == 2
