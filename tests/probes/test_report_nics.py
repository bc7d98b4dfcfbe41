"""Wire schema 5: RDMA NICs are optional; a report with them says schema_version 5, one
without is unchanged (older servers and probes keep working)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from peerwatch.probes.nics import NicDevice, NicPort
from peerwatch.probes.report import Report, ReportKind
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import build_report


def test_a_host_with_nics_sends_schema_5_and_one_without_sends_4() -> None:
    with_nics = build_report(SimulatedFabric("hgx8"), ReportKind.INVENTORY)
    without = build_report(SimulatedFabric("h200x2"), ReportKind.INVENTORY)
    assert with_nics.schema_version == 5 and len(with_nics.inventory.nics) == 8
    assert without.schema_version == 4
    assert "nics" not in without.model_dump(mode="json")["inventory"]
    assert "nic_ports" not in without.model_dump(mode="json")["counters"][0]


def test_nics_under_an_older_version_are_refused_by_name() -> None:
    report = build_report(SimulatedFabric("hgx8"), ReportKind.INVENTORY)
    data = report.model_dump(mode="json")
    data["schema_version"] = 4
    with pytest.raises(ValidationError, match="RDMA NICs .* need schema_version 5"):
        Report.model_validate(data)


def test_bad_nic_values_are_refused() -> None:
    with pytest.raises(ValidationError):
        NicPort(device="mlx5_0", port=1, counters={"symbol_error": -1})
    with pytest.raises(ValidationError):
        NicDevice(name="mlx5_0", gpu_paths={0: "NVL"})
    with pytest.raises(ValidationError):
        NicPort(device="mlx5_0", port=0)
