"""The shipped Alertmanager config mutes pair alerts that a link/GPU/PCIe alert explains, on
either end of the pair, and nothing else: checked in a real Alertmanager (Debian's
`prometheus-alertmanager`) with alerts labelled as deploy/prometheus/peerwatch-rules.yml
labels them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.app.alerting.real_alertmanager import alerts_in, running_alertmanager
from tests.conftest import eventually

CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "alertmanager" / "alertmanager.yml"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_alertmanager(CONFIG.read_text(), tmp_path_factory.mktemp("am")) as url:
        yield url


def _pair(host: str, gpu: int, peer: int,
          alertname: str = "P2PBandwidthDegraded") -> dict[str, str]:
    return {"alertname": alertname, "severity": "warning", "host": host,
            "gpu": str(gpu), "peer_gpu": str(peer)}


def _post(url: str, *labels: dict[str, str]) -> None:
    body = [{"labels": lab, "annotations": {"summary": "test"}} for lab in labels]
    httpx.post(f"{url}/api/v2/alerts", json=body, timeout=5).raise_for_status()


def _muted(url: str, host: str) -> dict[tuple[str, str, str], bool]:
    """(alertname, gpu, peer_gpu) -> inhibited, once Alertmanager has settled."""
    found: list[dict[str, Any]] = []

    def settled() -> bool:
        found[:] = alerts_in(url, filter=f'host="{host}"')
        return all(a["status"]["state"] != "unprocessed" for a in found)
    eventually(settled)
    return {(a["labels"]["alertname"], a["labels"].get("gpu", ""),
             a["labels"].get("peer_gpu", "")): bool(a["status"]["inhibitedBy"]) for a in found}


def test_a_down_link_mutes_its_gpus_pairs_in_both_directions(shipped: str) -> None:
    down = {"alertname": "NVLinkDown", "severity": "critical", "host": "hgx-a", "gpu": "3",
            "link": "7", "peer_gpu": "3"}
    _post(shipped, down, _pair("hgx-a", 3, 5), _pair("hgx-a", 5, 3), _pair("hgx-a", 1, 2))
    assert _muted(shipped, "hgx-a") == {
        ("NVLinkDown", "3", "3"): False,
        ("P2PBandwidthDegraded", "3", "5"): True,  # sent by the GPU with the bad link
        ("P2PBandwidthDegraded", "5", "3"): True,  # received by it
        ("P2PBandwidthDegraded", "1", "2"): False,  # not explained: pages
    }


def test_a_downtrained_pcie_link_mutes_only_its_own_host(shipped: str) -> None:
    pcie = {"alertname": "PCIeLinkDowntrained", "severity": "warning", "host": "pcie-b",
            "gpu": "1", "field": "width", "peer_gpu": "1"}
    _post(shipped, pcie, _pair("pcie-b", 0, 1), _pair("pcie-c", 0, 1))
    assert _muted(shipped, "pcie-b")[("P2PBandwidthDegraded", "0", "1")] is True
    assert _muted(shipped, "pcie-c")[("P2PBandwidthDegraded", "0", "1")] is False


def test_an_alert_without_the_peer_label_mutes_the_sending_end_only(shipped: str) -> None:
    """The server's own rules label a GPU alert host/gpu only: its receiving end still pages."""
    width = {"alertname": "NVLinkWidthReduced", "severity": "warning", "host": "hgx-d",
             "gpu": "4"}
    _post(shipped, width, _pair("hgx-d", 4, 6), _pair("hgx-d", 6, 4))
    muted = _muted(shipped, "hgx-d")
    assert muted[("P2PBandwidthDegraded", "4", "6")] is True
    assert muted[("P2PBandwidthDegraded", "6", "4")] is False


def test_a_gpu_fault_mutes_its_pairs_below_their_fleet_peers_too(shipped: str) -> None:
    """A pair far below its fleet peers because a link of one end is down is that link's
    page (the server's own rule leaves such pairs out the same way)."""
    down = {"alertname": "NVLinkDown", "severity": "critical", "host": "hgx-e", "gpu": "2",
            "link": "1", "peer_gpu": "2"}
    _post(shipped, down, _pair("hgx-e", 2, 7, "P2PBelowFleetPeers"),
          _pair("hgx-e", 7, 2, "P2PBelowFleetPeers"), _pair("hgx-e", 0, 1, "P2PBelowFleetPeers"))
    muted = _muted(shipped, "hgx-e")
    assert muted[("P2PBelowFleetPeers", "2", "7")] is True
    assert muted[("P2PBelowFleetPeers", "7", "2")] is True
    assert muted[("P2PBelowFleetPeers", "0", "1")] is False
