"""The demo's driver-verdict faults are cast on the default fleet, each from its start on."""

from __future__ import annotations

from peerwatch.app.demo.driver_story import STORY
from peerwatch.app.demo.fleet import DEFAULT_HOSTS, plan_fleet
from peerwatch.app.demo.scenario import default_scenario


def test_each_driver_fault_is_in_the_story_from_its_start() -> None:
    scenario = default_scenario(plan_fleet(DEFAULT_HOSTS))
    for preset, ordinal, start, fault, _ in STORY:
        host = f"{preset}-{ordinal:02d}"
        assert fault not in scenario.faults_at(host, start - 1)
        assert fault in scenario.faults_at(host, start + 1), (host, fault)
    assert any("DRAIN_P2P" in line or "drain P2P" in line for line in scenario.describe())
