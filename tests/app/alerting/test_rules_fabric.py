"""The fabric rules (app/alerting/rules_fabric.py) on simulated hosts: each contradiction
fires its own alert, names the GPU and the action, and resolves when the fault is gone; a
12-of-18 SKU fires nothing, not even NVLinkWidthReduced."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.alerting.rules import RULES
from peerwatch.app.judging.service import AlertingService
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.sim.faults import FabricManagerDown, FabricNotCompleted, PeerCopiesFail
from tests.app.alerting.simhost import SimHost


def host(sessions: sessionmaker[Session], settings: Settings, preset: str,
         name: str) -> SimHost:
    h = SimHost(sessions, settings, preset=preset, hostname=name)
    h.service = AlertingService(sessions, settings, h.alerting, RULES)
    return h


def test_fabric_not_ready_fires_per_gpu_and_resolves(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    h = host(sessions, sqlite_settings, "hgx8", "fab-rule-1")
    h.send()
    fault = FabricNotCompleted(state="not_started", gpu=5)
    h.inject(fault)
    h.step(30)
    h.step(150)
    assert h.active()["NVSwitchFabricNotReady"] == {(("gpu", "5"), ("host", "fab-rule-1"))}
    [alert] = h.alerts(state="firing", rule="NVSwitchFabricNotReady")
    assert "P2P cannot be trusted" in alert.annotations["description"]
    assert "nvidia-fabricmanager" in alert.annotations["description"]
    h.clear(fault)
    h.step(30)
    assert "NVSwitchFabricNotReady" not in h.active()


def test_fabric_manager_down_fires_for_the_host(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    h = host(sessions, sqlite_settings, "h200x2", "fab-rule-2")
    h.send()
    h.inject(FabricManagerDown())
    h.step(30)
    h.step(330)
    assert h.active().get("FabricManagerDown") == {(("host", "fab-rule-2"),)}
    assert "NVSwitchFabricNotReady" not in h.active()


def test_peer_copies_failing_fires_after_a_sweep(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    h = host(sessions, sqlite_settings, "h200x2", "fab-rule-3")
    h.sweep()
    h.inject(PeerCopiesFail(a=0, b=1))
    h.step(60, "sweep")
    # the one pair of a 2-GPU board is a pair fault: one page for the pair
    assert h.active()["PairCopiesFailing"] == {
        (("gpu", "0"), ("host", "fab-rule-3"), ("peer_gpu", "1"))}
    assert "PeerCopiesFailing" not in h.active()


def test_twelve_of_eighteen_sku_fires_nothing(
        sessions: sessionmaker[Session], sqlite_settings: Settings) -> None:
    h = host(sessions, sqlite_settings, "h100nvl2", "nvl-rule")
    h.sweep()
    h.step(120)
    h.step(900)
    assert h.active() == {}
