"""bench/gpu/all_to_all.py's measuring path, on a simulated 8-GPU NVSwitch board standing in
for the GPUs this machine lacks: every GPU's figure, its expectation, the ratio and the
efficiency it implies are printed, and a failed all-to-all makes the exit status 1."""

from __future__ import annotations

import re

import pytest

import bench.helpers.gpu
from bench.gpu import all_to_all
from peerwatch.probes.report import TestName
from peerwatch.probes.sim.faults import TransferFails
from peerwatch.probes.sim.simulated import SimulatedFabric


def test_each_gpu_is_printed_against_its_expectation(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(bench.helpers.gpu, "real_fabric_or_skip",
                        lambda: SimulatedFabric("hgx8", seed=2))
    assert all_to_all.main() == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^ *(\d) (a2a_\w+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +True",
                      out, re.MULTILINE)
    assert len(rows) == 16  # 8 GPUs x 2 tests
    for _, test, _, _, ratio, eff in rows:
        assert 0.9 < float(ratio) < 1.1
        declared = 0.75 if test == "a2a_ce" else 0.70
        assert abs(float(eff) - declared) < 0.08
    assert "expected basis (GPU0): all-to-all to 7 peers at once" in out


def test_a_failed_all_to_all_exits_1(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(bench.helpers.gpu, "real_fabric_or_skip", lambda: SimulatedFabric(
        "mesh4", faults=[TransferFails(gpu=1, test=TestName.A2A_NCCL)]))
    assert all_to_all.main() == 1
    assert re.search(r"^ *0 a2a_nccl +failed: TransferError", capsys.readouterr().out,
                     re.MULTILINE)
