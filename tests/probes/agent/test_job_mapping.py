"""Which job held each GPU, probe side: the dcgm-exporter-style mapping directory (one GPU,
several jobs, MIG names, stale and bad files with their warnings), the report carrying it
through the real report builder, and the agent's one `peerwatch_gpu_job_info` series per
(GPU, job) that no other series carries."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from peerwatch.probes.agent.agent_state import AgentState
from peerwatch.probes.agent.job_mapping import boot_time, read_job_mapping
from peerwatch.probes.agent.metrics_server import AgentExposition
from peerwatch.probes.agent.passes import report_builder
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.report import GpuJob, JobSource, Report, ReportKind
from peerwatch.probes.sim.simulated import SimulatedFabric
from tests.app.metrics_helpers import promtool_check, series

GPUS = set(range(8))


def write(d: Path, name: str, text: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(text)
    return d / name


def claimed(found) -> list[tuple[int, str]]:  # type: ignore[no-untyped-def]
    return [(j.gpu, j.job) for j in found.jobs]


def test_one_file_per_gpu_names_its_jobs(tmp_path: Path) -> None:
    write(tmp_path, "0", "4711\n")
    write(tmp_path, "3", "4711\n4712_7\n\n")  # two jobs share GPU 3 (an array task)
    write(tmp_path, "2.1", "4800+1\n")  # MIG instance 1 of GPU 2
    write(tmp_path, "README", "not a mapping file\n")  # skipped, as dcgm-exporter does
    (tmp_path / "5").mkdir()  # a directory named like a GPU: skipped
    found = read_job_mapping(tmp_path, GPUS, booted_at=time.time() - 3600)
    assert claimed(found) == [(0, "4711"), (2, "4800+1"), (3, "4711"), (3, "4712_7")]
    assert found.warnings == []
    assert {j.source for j in found.jobs} == {JobSource.MAPPING_DIR}


def test_no_directory_claims_nothing_and_says_nothing(tmp_path: Path) -> None:
    found = read_job_mapping(tmp_path / "absent", GPUS, booted_at=None)
    assert found.jobs == [] and found.warnings == []


def test_a_file_from_before_the_boot_is_stale(tmp_path: Path) -> None:
    old = write(tmp_path, "1", "999\n")
    write(tmp_path, "2", "1000\n")
    booted = time.time() - 60
    os.utime(old, (booted - 86_400, booted - 86_400))  # left by an epilog that never ran
    found = read_job_mapping(tmp_path, GPUS, booted_at=booted)
    assert claimed(found) == [(2, "1000")]
    [warning] = found.warnings
    assert warning.where == f"job_mapping {old}" and "stale" in warning.message


def test_bad_content_is_a_warning_naming_the_file_and_line(tmp_path: Path) -> None:
    bad = write(tmp_path, "4", "4711\nrm -rf /\n")
    write(tmp_path, "9", "4711\n")  # an 8-GPU host has no GPU 9
    write(tmp_path, "6", "\xff\n")
    (tmp_path / "6").write_bytes(b"\xff\xfe\n")  # not UTF-8
    write(tmp_path, "7", "1\n" * 3000)  # too big to be a mapping
    found = read_job_mapping(tmp_path, GPUS, booted_at=None)
    assert found.jobs == []
    by_file = {w.where.split("/")[-1]: w.message for w in found.warnings}
    assert set(by_file) == {"4", "6", "7", "9"}
    assert "'rm -rf /' is not a job id" in by_file["4"] and str(bad) in found.warnings[0].where
    assert "does not have" in by_file["9"] and "GPUs: 0, 1, 2" in by_file["9"]
    assert "cannot read" in by_file["6"] and "too big" in by_file["7"]


def test_more_jobs_than_a_gpu_can_hold_claims_none(tmp_path: Path) -> None:
    write(tmp_path, "0", "".join(f"{n}\n" for n in range(100, 120)))
    found = read_job_mapping(tmp_path, GPUS, booted_at=None)
    assert found.jobs == [] and "20 jobs on GPU 0" in found.warnings[0].message


def test_boot_time_is_read_from_the_kernel() -> None:
    booted = boot_time()
    assert booted is not None and booted < time.time()


def _build(tmp_path: Path, kind: ReportKind = ReportKind.INVENTORY) -> Report:
    settings = ProbeSettings(token="t", job_mapping_dir=tmp_path / "map",
                             kubelet_socket=tmp_path / "no-kubelet.sock")
    fabric = SimulatedFabric("hgx8", seed=1, hostname="gpu-node-3")
    return report_builder(fabric, settings, watchdog=False)(kind)


def test_the_report_carries_the_jobs_and_the_warnings(tmp_path: Path) -> None:
    write(tmp_path / "map", "1", "4711\n")
    write(tmp_path / "map", "2", "4711\n")
    write(tmp_path / "map", "12", "4711\n")
    report = Report.model_validate_json(_build(tmp_path).model_dump_json())
    assert report.jobs == [GpuJob(gpu=1, job="4711"), GpuJob(gpu=2, job="4711")]
    assert [e.where for e in report.errors] == [f"job_mapping {tmp_path / 'map' / '12'}"]


def test_without_a_mapping_the_report_has_no_jobs_field(tmp_path: Path) -> None:
    report = _build(tmp_path)
    assert report.jobs == [] and '"jobs"' not in report.model_dump_json()  # older servers


def test_a_job_naming_a_gpu_outside_the_inventory_is_refused(tmp_path: Path) -> None:
    body = _build(tmp_path).model_dump(mode="json")
    body["jobs"] = [{"gpu": 30, "job": "1"}]
    with pytest.raises(ValueError, match=r"jobs name GPU\(s\) \[30\] not in inventory"):
        Report.model_validate(body)
    body["jobs"] = [{"gpu": 0, "job": "bad job"}]
    with pytest.raises(ValueError, match="job id 'bad job' breaks the rule"):
        Report.model_validate(body)


def test_one_info_series_per_gpu_job_and_no_job_label_elsewhere(tmp_path: Path) -> None:
    write(tmp_path / "map", "0", "4711\n")
    write(tmp_path / "map", "1", "4711\n4712\n")
    state = AgentState()
    state.record(_build(tmp_path, ReportKind.SWEEP))
    text = AgentExposition(state)().decode()
    assert promtool_check(text) == ""
    info = sorted(s for s in series(text) if s.startswith("peerwatch_gpu_job_info{"))
    assert info == [
        'peerwatch_gpu_job_info{gpu="0",host="gpu-node-3",job="4711",source="mapping_dir"} 1.0',
        'peerwatch_gpu_job_info{gpu="1",host="gpu-node-3",job="4711",source="mapping_dir"} 1.0',
        'peerwatch_gpu_job_info{gpu="1",host="gpu-node-3",job="4712",source="mapping_dir"} 1.0',
    ]
    assert all('job="' not in s for s in series(text) if not s.startswith("peerwatch_gpu_job"))
