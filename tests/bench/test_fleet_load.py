"""The fleet and overload benches' simulated hosts reach the server as distinct hosts.

bench/helpers/fleet_load.py posts one template report per kind with its host mark replaced; a mark
that the report model's normalising changed (it lowercases host names) once made every
simulated host post as one host, so the 1000-host figures came from one. Here a real
`peerwatch serve` takes the warm-up and a short cadence from a few hosts, and each must be
a host of its own on the server, readable by name.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from bench.helpers import fleet_load
from bench.helpers.agent_wire import AgentWire
from bench.helpers.fleet_load import (
    HEARTBEAT,
    HOST_MARK,
    TOKEN,
    MarkMissing,
    Record,
    client,
    deliver,
    host_name,
    load,
    templates,
    warm_up,
)
from bench.helpers.serve import serve_process
from peerwatch.probes.report import Report, ReportKind, valid_hostname
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report

HOSTS = 3


def test_each_template_names_its_host_by_the_mark_once() -> None:
    for kind, template in templates().items():
        body = template.body("hgx8-0042", datetime.now(UTC))
        assert HOST_MARK not in body, kind
        assert Report.model_validate_json(body).host.hostname == "hgx8-0042", kind


def test_a_mark_the_model_would_change_is_refused_when_the_template_is_built(
        monkeypatch: pytest.MonkeyPatch) -> None:
    shouting = "BENCH-HOST-MARK"
    assert valid_hostname(shouting) != shouting  # what broke the bench before
    fabric = SimulatedFabric("hgx8", seed=11, hostname=shouting)
    report = build_report(fabric, kind=ReportKind.INVENTORY,
                          options=SweepOptions(timeout_s=None), now=lambda: fleet_load.MARK)
    monkeypatch.setattr(fleet_load, "HOST_MARK", shouting)
    with pytest.raises(MarkMissing, match="host mark"):
        fleet_load._check_marks("inventory", report.model_dump_json(), report)


def test_simulated_hosts_reach_a_real_server_as_distinct_hosts(tmp_path: Path) -> None:
    names = {host_name(i) for i in range(HOSTS)}
    tpl = templates()
    with serve_process(f"sqlite:///{tmp_path / 'bench.db'}", tmp_path,
                       {"PEERWATCH_PROBE_TOKENS": TOKEN}) as base:
        warm = asyncio.run(warm_up([base], HOSTS, tpl))
        window = asyncio.run(load([base], HOSTS, tpl, compress=100.0, duration_s=1.0,
                                  settle_most_s=60.0))
        cadence = window.measured
        listed = httpx.get(f"{base}/api/v1/hosts", timeout=30).json()["hosts"]
        details = {name: httpx.get(f"{base}/api/v1/hosts/{name}", timeout=30).status_code
                   for name in sorted(names)}
    assert len(warm.accepted()) == 2 * HOSTS
    assert cadence.samples, "the cadence phase posted nothing"
    # every probe named itself, as the agent does: a refusal counts for its host
    assert set(cadence.tried) | set(window.settle.tried) <= names
    assert {h["host"] for h in listed} == names
    assert details == dict.fromkeys(sorted(names), 200)


def test_a_fleet_host_sends_heartbeats_and_its_report_in_full_after_a_409(
        tmp_path: Path) -> None:
    """bench/fleet.py's hosts post what the agent posts (`AgentWire`): between full reports
    a heartbeat, and when the server holds no full report the heartbeat names (409), the
    report in full at once, then heartbeats again."""
    wire = AgentWire(Path(__file__).resolve().parents[2], host_name(0), busy=True)
    record = Record()

    async def inventory_passes(base: str) -> None:
        async with client(1) as http:
            for _ in range(2):
                await deliver(http, base, wire, "inventory", lambda: record, 1e12)

    with serve_process(f"sqlite:///{tmp_path / 'bench.db'}", tmp_path,
                       {"PEERWATCH_PROBE_TOKENS": TOKEN}) as base:
        asyncio.run(warm_up([base], 1, templates(), wires=[wire]))
        asyncio.run(inventory_passes(base))  # a heartbeat each, on the warm-up's inventory
        wire.full("inventory", datetime.now(UTC))  # a full report the server never got
        asyncio.run(inventory_passes(base))
    assert [(s.kind, s.status) for s in record.samples] == [
        (HEARTBEAT, 204), (HEARTBEAT, 204),
        (HEARTBEAT, 409), ("inventory", 201), (HEARTBEAT, 204)]
