"""Ingest serializes a report at most once: its digest (what tells a retry from a reused report_id)
and the inventory's JSON (what the inventory memo hashes) come from the same bytes. The
inventory's JSON is cut out of the report's; it must be exactly what serializing the
inventory alone gives, for every preset, with faults and with text that looks like JSON.
A posted report is known by the SHA-256 of its bytes instead, and only its inventory is
serialized; its retry is the same report whichever digest it was stored under."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest

from peerwatch.app.ingest.digest import canonical_digest, report_digest_and_inventory, same_report
from peerwatch.app.ingest.posted import parse_report
from peerwatch.probes.report import Report, ReportKind
from peerwatch.probes.sim.faults import FabricManagerDown, GpuLost
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import build_report

PRESETS = ("h200x2", "hgx8", "mesh4", "pcie4", "h100nvl2", "nvl72")


def _check(report: Report) -> None:
    digest, inventory = report_digest_and_inventory(report)
    assert digest == hashlib.sha256(report.model_dump_json().encode()).hexdigest()
    assert inventory == report.inventory.model_dump_json().encode()


@pytest.mark.parametrize("preset", PRESETS)
def test_the_inventory_is_cut_from_the_report_exactly(preset: str) -> None:
    fabric = SimulatedFabric(preset, seed=5, hostname=f"digest-{preset}")
    _check(build_report(fabric, kind=ReportKind.INVENTORY))


def test_faults_and_json_looking_text_keep_the_cut_exact() -> None:
    fabric = SimulatedFabric("hgx8", seed=5, hostname="digest-faults")
    fabric.inject(GpuLost(gpu=5), FabricManagerDown())
    report = build_report(fabric, kind=ReportKind.INVENTORY)
    gpus = [g.model_copy(update={"name": 'H200 ,"counters":{"inventory":1}'})
            for g in report.inventory.gpus]
    report = report.model_copy(update={
        "host": report.host.model_copy(update={"probe_version": ',"inventory":{"x":1}'}),
        "inventory": report.inventory.model_copy(update={"gpus": gpus})})
    _check(report)


def test_a_posted_report_is_known_by_its_bytes_and_its_inventory_serialized() -> None:
    report = build_report(SimulatedFabric("hgx8", seed=5, hostname="digest-body"),
                          kind=ReportKind.SWEEP)
    body = report.model_dump_json(indent=1).encode()  # not the canonical bytes
    digest, inventory = report_digest_and_inventory(report, body)
    assert digest == hashlib.sha256(body).hexdigest() != canonical_digest(report)
    assert inventory == report.inventory.model_dump_json().encode()


def test_a_retry_is_the_same_report_under_either_digest_and_another_is_not() -> None:
    report = build_report(SimulatedFabric("h200x2", seed=5, hostname="digest-retry"),
                          kind=ReportKind.INVENTORY)
    body = report.model_dump_json(indent=1).encode()
    posted, _ = report_digest_and_inventory(report, body)
    in_process, _ = report_digest_and_inventory(report)
    assert same_report(posted, posted, report)  # a probe's retry: the same bytes
    assert same_report(in_process, posted, report)  # stored by an older release
    other = report.model_copy(update={"finished_at": report.finished_at + timedelta(seconds=1)})
    other_posted, _ = report_digest_and_inventory(other, other.model_dump_json().encode())
    assert not same_report(posted, other_posted, other)
    assert not same_report(in_process, other_posted, other)


@pytest.mark.parametrize("preset", PRESETS)
def test_a_current_probes_body_is_the_servers_canonical_json(preset: str) -> None:
    """What `X-Peerwatch-Wire` vouches for: a probe with the server's wire models writes, for
    a report sent from memory or re-read from its spool, exactly the JSON the server would
    write for the report it parses, so the bytes' digest is the canonical one."""
    fabric = SimulatedFabric(preset, seed=5, hostname=f"wire-{preset}")
    fabric.inject(GpuLost(gpu=1))
    for kind in (ReportKind.SWEEP, ReportKind.INVENTORY):
        body = build_report(fabric, kind=kind).model_dump_json().encode()
        spooled = Report.model_validate_json(body).model_dump_json().encode()
        assert spooled == body
        assert parse_report(body).model_dump_json().encode() == body
