"""The wire schema rejects what no real fabric can produce, naming the field."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from pydantic import ValidationError

from peerwatch.probes.report import (
    GPU_TESTS,
    SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    GpuInfo,
    HostIdentity,
    Inventory,
    PairInfo,
    PathLevel,
    Report,
    ReportKind,
    TestName,
    TransferResult,
    Unit,
    utcnow,
)


def _gpu(i: int) -> GpuInfo:
    return GpuInfo(index=i, uuid=f"GPU-{i}", name="sim", pci_bus_id=f"0000:0{i}:00.0",
                   memory_total_bytes=1 << 30)


def _report(results: list[TransferResult]) -> Report:
    now = utcnow()
    return Report(kind=ReportKind.SWEEP, host=HostIdentity(hostname="h", fabric="simulated:x"),
                  started_at=now, finished_at=now + timedelta(seconds=1),
                  inventory=Inventory(gpus=[_gpu(0), _gpu(1)]), results=results)


def test_round_trip_through_json() -> None:
    r = _report([TransferResult(test=TestName.CE_WRITE, src=0, dst=1, value=3.9e11,
                                unit=Unit.BYTES_PER_SECOND, samples=[3.9e11])])
    assert Report.model_validate_json(r.model_dump_json()) == r


@pytest.mark.parametrize("value", [math.nan, -1.0, 1e14])
def test_impossible_bandwidth_is_rejected(value: float) -> None:
    with pytest.raises(ValidationError):
        TransferResult(test=TestName.CE_WRITE, src=0, dst=1, value=value,
                       unit=Unit.BYTES_PER_SECOND)


def test_failed_result_carries_error_not_value() -> None:
    r = TransferResult(test=TestName.SM_READ, src=0, dst=1, unit=Unit.BYTES_PER_SECOND,
                       error="CUDA error 700")
    assert r.value is None
    with pytest.raises(ValidationError, match="exactly one"):
        TransferResult(test=TestName.SM_READ, src=0, dst=1, unit=Unit.BYTES_PER_SECOND)


def test_latency_must_be_in_seconds() -> None:
    with pytest.raises(ValidationError, match="unit must be 's'"):
        TransferResult(test=TestName.LATENCY, src=0, dst=1, value=8e-7,
                       unit=Unit.BYTES_PER_SECOND)


def test_result_naming_unknown_gpu_is_rejected() -> None:
    bad = TransferResult(test=TestName.CE_WRITE, src=0, dst=7, value=1e9,
                         unit=Unit.BYTES_PER_SECOND)
    with pytest.raises(ValidationError, match=r"GPU\(s\) \[7\]"):
        _report([bad])


def test_pair_needs_two_gpus() -> None:
    with pytest.raises(ValidationError):
        PairInfo(src=1, dst=1, topology="NV18", pcie_path=PathLevel.PHB)


@pytest.mark.parametrize("test", GPU_TESTS)
def test_a_per_gpu_result_names_exactly_one_gpu(test: TestName) -> None:
    ok = TransferResult(test=test, src=1, value=5e10, unit=Unit.BYTES_PER_SECOND)
    assert _report([ok]).schema_version == SCHEMA_VERSION == 4
    for wrong in ({"src": 0, "dst": 1}, {"src": 0, "dst": 0}, {}, {"src": 0, "gpus": [0, 1]}):
        with pytest.raises(ValidationError, match=f"{test} names one GPU"):
            TransferResult(test=test, value=5e10, unit=Unit.BYTES_PER_SECOND, **wrong)
    with pytest.raises(ValidationError, match=r"GPU\(s\) \[7\]"):
        _report([TransferResult(test=test, src=7, value=5e10, unit=Unit.BYTES_PER_SECOND)])


def test_version_1_reports_stay_valid_but_cannot_carry_per_gpu_tests() -> None:
    pair = TransferResult(test=TestName.CE_WRITE, src=0, dst=1, value=1e11,
                          unit=Unit.BYTES_PER_SECOND)
    old = _report([pair]).model_dump(mode="json") | {"schema_version": 1}
    assert Report.model_validate(old).schema_version == 1
    h2d = TransferResult(test=TestName.H2D, src=0, value=5e10, unit=Unit.BYTES_PER_SECOND)
    old["results"].append(h2d.model_dump(mode="json"))
    with pytest.raises(ValidationError, match="test h2d needs schema_version 2"):
        Report.model_validate(old)
    assert SUPPORTED_SCHEMA_VERSIONS == (1, 2, 3, 4, 5)
