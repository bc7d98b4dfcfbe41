"""Fabric-service faults of the simulated host (probes/sim/simfabric.py): what NVML, /proc and the
transfer tests would show, consistently, and the H100 NVL preset built with 12 of 18 links."""

from __future__ import annotations

import pytest

from peerwatch.probes.errors import TransferError
from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.inventory import collect_inventory
from peerwatch.probes.report import LinkState, TestName
from peerwatch.probes.sim.faults import (
    DriverRestarted,
    FabricManagerDown,
    FabricNotCompleted,
    FabricStatusError,
    FabricUnhealthy,
    PeerCopiesFail,
)
from peerwatch.probes.sim.simulated import SimulatedFabric


def test_registration_faults_change_only_the_named_gpu() -> None:
    fab = SimulatedFabric("hgx8", faults=[FabricNotCompleted(state="not_started", gpu=4),
                                          FabricStatusError(status="unknown", gpu=5),
                                          FabricUnhealthy(gpu=6)])
    states = {g: fab.gpu(g).switch_fabric for g in range(8)}
    assert states[4] is not None and states[4].state == "not_started"
    assert states[5] is not None and states[5].status == "unknown"
    assert states[6] is not None and states[6].health_issues == ["route_unhealthy"]
    assert all(s is not None and (s.state, s.status) == ("completed", "success")
               for g, s in states.items() if g not in (4, 5, 6))


def test_fabric_manager_is_in_the_inventory() -> None:
    fab = SimulatedFabric("h200x2")
    inv = collect_inventory(fab, [])
    assert inv.fabric_manager is not None and inv.fabric_manager.running is True
    fab.inject(FabricManagerDown())
    assert collect_inventory(fab, []).fabric_manager.running is False  # type: ignore[union-attr]
    assert fab.gpu(0).switch_fabric.state == "completed"  # type: ignore[union-attr]


def test_peer_copies_fail_while_links_and_fabric_look_fine() -> None:
    fab = SimulatedFabric("h200x2", faults=[PeerCopiesFail(a=0, b=1)])
    with pytest.raises(TransferError, match="peer copy"):
        fab.measure(TestSpec(TestName.CE_WRITE, src=1, dst=0))
    assert fab.measure(TestSpec(TestName.STAGED, src=0, dst=1)).value > 0
    assert all(p.state is LinkState.UP for p in fab.nvlinks(0))
    assert fab.pair(0, 1).topology == "NV18"


def test_driver_restart_is_reported_as_the_driver_load_time() -> None:
    fab = SimulatedFabric("h200x2")
    assert fab.host().driver_loaded_at is None
    fab.inject(DriverRestarted())
    assert fab.host().driver_loaded_at is not None


def test_h100nvl_preset_wires_12_of_18() -> None:
    fab = SimulatedFabric("h100nvl2")
    ports = fab.nvlinks(1)
    assert len(ports) == 18 and sum(p.state is LinkState.UP for p in ports) == 12
    assert fab.pair(0, 1).nvlink_width == 12
    assert fab.gpu(0).switch_fabric is None
