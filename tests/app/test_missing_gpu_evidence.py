"""GPU evidence end to end, on SQLite and PostgreSQL: a GPU on the PCI bus (or seen by the
agent since boot) that NVML does not list is missing in the very first report a server sees
(a new server, a wiped database), paged by `GPUMissing` and judged down, so the host is not
"7 GPUs, 42 pairs and 126 links healthy"; the drain state carries each source's GPU count
and the newest judged full sweep; a probe that sends no evidence is still accepted."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from fastapi.testclient import TestClient

from peerwatch.probes.agent.gpus_seen import SeenSinceBoot
from peerwatch.probes.agent.passes import report_builder
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.report import Report, ReportKind, TestName
from peerwatch.probes.sim.faults import GpuLost
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.app.conftest import probe_headers

ONE_TEST = SweepOptions(tests=(TestName.CE_WRITE,))


def post(client: TestClient, report: Report) -> None:
    r = client.post("/api/v1/reports", headers=probe_headers(),
                    content=report.model_dump_json())
    assert r.status_code == 201, r.text


def node(client: TestClient, host: str) -> dict:
    nodes = client.get("/api/v1/drain/state").json()["nodes"]
    return next(n for n in nodes if n["host"] == host)


def firing(client: TestClient, host: str) -> list[dict]:
    return [a for a in client.get("/api/v1/alerts").json()["alerts"]
            if a["labels"].get("host") == host and a["labels"]["alertname"] == "GPUMissing"
            and a["state"] == "firing"]


def test_a_gpu_on_the_pci_bus_missing_from_the_first_report_is_missing(
        client: TestClient) -> None:
    fab = SimulatedFabric("hgx8", seed=1, hostname="gpu-a", faults=[GpuLost(gpu=4)])
    post(client, build_report(fab, ReportKind.SWEEP, ONE_TEST))
    n = node(client, "gpu-a")
    assert n["gpu_counts"] == {"nvml": 7, "inventory": 8, "pci": 8}
    assert n["verdict"] != "healthy"
    [gpu4] = [g for g in n["gpus"] if g["gpu"] == 4]
    assert gpu4["verdict"] == "down" and "missing" in gpu4["reason"]
    assert n["full_sweep_at"] is None  # GPU4 was not tested: not a full sweep
    [alert] = firing(client, "gpu-a")
    assert alert["labels"]["gpu"] == "4"
    assert "0000:9a:00.0) is on the PCI bus but NVML does not list it" in \
        alert["annotations"]["description"]

    for page in ("", "/topology", "/matrix", "/health", "/events"):  # every host page reads it
        assert client.get(f"/api/v1/hosts/gpu-a{page}").status_code == 200, page
    assert client.get("/api/v1/scheduler/hosts").status_code == 200
    assert 'peerwatch_gpu_present{gpu="4",host="gpu-a"} 0.0' in client.get("/metrics").text

    fab.clear()  # the reset brings it back: present, paged no more, a full sweep judged
    post(client, build_report(fab, ReportKind.SWEEP, ONE_TEST))
    n = node(client, "gpu-a")
    assert n["gpu_counts"] == {"nvml": 8, "inventory": 8, "pci": 8}
    assert n["verdict"] == "healthy" and firing(client, "gpu-a") == []
    assert datetime.fromisoformat(n["full_sweep_at"])


def test_a_gpu_gone_from_the_bus_too_is_missing_by_the_agents_seen_set(
        client: TestClient, tmp_path: Path) -> None:
    boot = tmp_path / "boot_id"
    boot.write_text("6c7f5c6e-1d2b-4c3e-9a8f-0b1c2d3e4f50\n")
    fab = SimulatedFabric("hgx8", seed=1, hostname="gpu-b")
    seen = SeenSinceBoot(tmp_path / "gpus-seen.state", boot)
    build = report_builder(fab, ProbeSettings(job_mapping_dir=None, kubelet_socket=None),
                           watchdog=False, seen=seen)
    build(ReportKind.INVENTORY)  # the agent saw all eight (this server never hears of it)
    fab.inject(GpuLost(gpu=6, on_pci=False))
    report = build(ReportKind.INVENTORY)
    assert report.inventory.evidence is not None
    assert len(report.inventory.evidence.pci or []) == 7
    post(client, report)
    n = node(client, "gpu-b")
    assert n["gpu_counts"] == {"nvml": 7, "inventory": 8, "pci": 7, "seen_since_boot": 8}
    [alert] = firing(client, "gpu-b")
    uuid = fab._uuid(6)
    assert alert["labels"]["gpu"] == "6" and uuid in alert["annotations"]["description"]


def test_a_probe_without_evidence_is_accepted_and_judged_as_before(client: TestClient) -> None:
    fab = SimulatedFabric("hgx8", seed=1, hostname="gpu-c", faults=[GpuLost(gpu=4)])
    report = build_report(fab, ReportKind.INVENTORY)
    old = report.model_copy(update={"inventory": report.inventory.model_copy(
        update={"evidence": None})})
    assert '"evidence"' not in old.model_dump_json()
    post(client, old)
    n = node(client, "gpu-c")
    assert n["gpu_counts"] == {"nvml": 7, "inventory": 7}  # nothing says an eighth exists
    assert firing(client, "gpu-c") == []


def test_a_gpu_gone_before_the_agent_saw_it_is_missing_by_the_expected_count(
        client: TestClient, tmp_path: Path) -> None:
    """GPU7 gone from NVML and the PCI bus before the agent started (its seen set never
    named it): the host's expected count (PEERWATCH_PROBE_EXPECTED_GPUS=8) makes it missing from
    the first report a fresh server sees, not a whole 7-GPU host."""
    fab = SimulatedFabric("hgx8", seed=1, hostname="gpu-e",
                          faults=[GpuLost(gpu=7, on_pci=False)])
    settings = ProbeSettings(token="t", expected_gpus=8, spool_dir=tmp_path / "spool")
    build = report_builder(fab, settings, seen=SeenSinceBoot(tmp_path / "seen.state",
                                                             boot_id_path=tmp_path / "boot"))
    (tmp_path / "boot").write_text("boot-1\n")
    report = build(ReportKind.INVENTORY)
    assert report.inventory.evidence is not None and report.inventory.evidence.expected == 8
    post(client, report)
    n = node(client, "gpu-e")
    assert n["gpu_counts"] == {"nvml": 7, "inventory": 8, "pci": 7, "seen_since_boot": 7,
                               "expected": 8}
    [gpu7] = [g for g in n["gpus"] if g["gpu"] == 7]
    assert gpu7["verdict"] == "down" and "missing" in gpu7["reason"]
    [alert] = firing(client, "gpu-e")
    assert alert["labels"]["gpu"] == "7"
    assert "PEERWATCH_PROBE_EXPECTED_GPUS" in alert["annotations"]["description"]
    post(client, build(ReportKind.INVENTORY))  # the next report: the same row, one alert
    assert [a["labels"]["gpu"] for a in firing(client, "gpu-e")] == ["7"]
    assert len(node(client, "gpu-e")["gpus"]) == 8
