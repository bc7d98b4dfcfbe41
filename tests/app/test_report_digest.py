"""Ingest serializes a report once: its digest (what tells a retry from a reused report_id)
and the inventory's JSON (what the inventory memo hashes) come from the same bytes. The
inventory's JSON is cut out of the report's; it must be exactly what serializing the
inventory alone gives, for every preset, with faults and with text that looks like JSON."""

from __future__ import annotations

import hashlib

import pytest

from app.services.report_checks import report_digest_and_inventory
from probes.report import Report, ReportKind
from probes.sim.faults import FabricManagerDown, GpuLost
from probes.sim.simulated import SimulatedFabric
from probes.sweep import build_report

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
