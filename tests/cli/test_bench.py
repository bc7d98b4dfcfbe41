"""`peerwatch bench` end to end on simulated hosts: matrices, JSON, and one-line usage errors."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter

import pytest

from peerwatch.app.cli import build_parser, main
from peerwatch.probes.report import GPU_TESTS, JOINT_TESTS, PAIR_TESTS, TestName


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["bench", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_hgx8_json_has_all_56_ordered_pairs_for_every_pair_test(
        capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "--fabric", "simulated:hgx8", "--json")
    assert status == 0
    doc = json.loads(out)  # one document, nothing else on stdout
    per_test = Counter(r["test"] for r in doc["results"])
    assert per_test == {**{t.value: 56 for t in PAIR_TESTS}, "allreduce": 1,
                        **{t.value: 8 for t in (*GPU_TESTS, *JOINT_TESTS)}}
    pairs = {(r["src"], r["dst"]) for r in doc["results"] if r["test"] == "ce_write"}
    assert pairs == set(itertools.permutations(range(8), 2))
    for r in doc["results"]:
        assert {"src", "dst", "test", "value", "unit", "expected", "ratio", "contended",
                "foreign_bytes", "gpu_time_s"} <= set(r)
        if r["test"] not in ("allreduce", "local"):  # local: judged by its baseline
            assert 0.9 < r["ratio"] < 1.1, r
    assert len(doc["inventory"]["gpus"]) == 8 and doc["cost"]["gpu_time_s"] > 0
    assert doc["host"]["fabric"] == "simulated:hgx8"
    # the driver's own verdicts (schema 4): each GPU's reads, AER, IMEX
    assert {g["driver"]["recovery_action"] for g in doc["inventory"]["gpus"]} == {"none"}
    assert doc["inventory"]["imex"]["present"] is False
    assert {a["gpu"] for a in doc["counters"][0]["aer"]} == set(range(8))
    # the RDMA NICs (schema 5): each NIC with its GPUs' paths, each port read and judged
    assert doc["schema_version"] == 5 and len(doc["inventory"]["nics"]) == 8
    assert doc["inventory"]["nics"][0]["gpu_paths"]["0"] == "PIX"
    assert {p["device"] for p in doc["counters"][-1]["nic_ports"]} == {
        f"mlx5_{i}" for i in range(8)}
    assert [(p["nic"], p["verdict"]) for p in doc["nics"]] == [
        (f"mlx5_{i}", "healthy") for i in range(8)]
    assert "symbol_error" in doc["nics"][0]["counters"] and doc["nics"][0]["rate_gbps"] == 400


def test_human_output_reads_like_nvbandwidth_and_nvidia_smi(
        capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "--fabric", "simulated:mesh4", "--tests",
                          "ce_write,latency,allreduce")
    assert status == 0
    assert out.count("GPU(row) -> GPU(column)") == 3  # two test matrices + P2P
    assert "GB/s" in out and " ns" in out and "allreduce" in out
    topo = out[out.index("Topology"):]
    assert "NV4" in topo and "SYS" in topo and "OK nvlink" in topo and "OK pcie" in topo
    assert "Ratio to expected" in out and "latency: expected / measured" in out
    assert "Sweep cost: GPU time" in out
    assert "sm_write" not in out  # only the tests asked for


def test_same_seed_same_json_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    def values(seed: str) -> list[float]:
        _, out, _ = _run(capsys, "--fabric", "simulated:h200x2", "--json", "--seed", seed)
        return [r["value"] for r in json.loads(out)["results"]]

    assert values("4") == values("4") != values("5")


def test_gpu_subset_and_samples(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "--fabric", "simulated:hgx8", "--gpus", "2,5",
                          "--tests", "sm_read", "--samples", "5", "--json")
    results = json.loads(out)["results"]
    assert status == 0 and {(r["src"], r["dst"]) for r in results} == {(2, 5), (5, 2)}
    assert all(len(r["samples"]) == 5 for r in results)


@pytest.mark.parametrize(("argv", "message"), [
    (["--fabric", "simulated:dgx9"],
     "unknown simulated preset 'dgx9' (known: h100nvl2, h200x2, hgx8"),
    (["--fabric", "cuda"], "unknown fabric 'cuda'"),
    (["--tests", "ce_write,bogus"], "unknown test 'bogus'"),
    (["--fabric", "simulated:mesh4", "--gpus", "0,7"], "no GPU 7 on simulated:mesh4"),
    (["--gpus", "one"], "--gpus must be comma-separated GPU indices"),
    (["--samples", "0"], "--samples must be at least 1"),
])
def test_bad_arguments_are_one_line_and_status_2(
        capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    status, out, err = _run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("peerwatch bench: error: ") and message in err


def test_every_option_says_its_default() -> None:
    sub = build_parser()._subparsers._group_actions[0].choices["bench"]  # type: ignore[union-attr]
    for action in sub._actions:
        if action.option_strings and action.dest != "help":
            assert "default" in (action.help or ""), action.dest
    help_text = sub.format_help()
    for test in TestName:
        assert test.value in help_text
    assert "simulated:hgx8" in help_text


def test_help_states_each_tests_default_sample_count(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("ce_write, ce_read, net_write 2; ce_bidir, sm_write, sm_read, latency, staged, "
            "allreduce, h2d, d2h, local, gdr_loopback, a2a_ce, a2a_nccl, nvls_allreduce 3") in text


@pytest.mark.parametrize("gpus", ["0", "0,0"])
def test_a_selection_of_one_gpu_says_so_and_shows_no_blank_matrices(
        capsys: pytest.CaptureFixture[str], gpus: str) -> None:
    status, out, err = _run(capsys, "--fabric", "simulated:h200x2", "--gpus", gpus)
    assert status == 0
    assert err.strip().splitlines() == [
        "peerwatch bench: one GPU selected (GPU 0): the pair tests need two GPUs; showing what "
        "one GPU can tell: its PCIe link, NVLink ports, its host <-> GPU and local copies, and "
        "the probe's cost"]
    assert "GPU(row) -> GPU(column)" not in out and "Ratio to expected" not in out
    rows = [line for line in out.splitlines() if line.strip().startswith("0 ")]
    assert "NVIDIA H200" in rows[0] and "Gen5 x16" in rows[0] and "18/18" in rows[0]
    # measured PCIe figures: h2d and d2h near 54.6 GB/s, 0.98-0.99 of expected
    assert re.search(r"5[45]\.\d \(0\.9\d\)\s+5[45]\.\d \(0\.9\d\)\s+20\d\d\.\d", rows[1]), rows
    assert "PCIe gen5 x16 (63.0 GB/s) x 0.88" in rows[1]
    assert "Sweep cost" in out


def test_a_one_gpu_host_says_so() -> None:
    from peerwatch.app.cli.commands.bench import one_gpu_note
    from peerwatch.probes.sim.simulated import SimulatedFabric
    from peerwatch.probes.sweep import SweepOptions, build_report

    fabric = SimulatedFabric("h200x2")
    report = build_report(fabric, options=SweepOptions(tests=(TestName.CE_WRITE,)))
    inventory = report.inventory.model_copy(update={"gpus": report.inventory.gpus[:1]})
    alone = report.model_copy(update={"inventory": inventory})
    assert one_gpu_note(alone, None).startswith("this host has one GPU (GPU 0): ")  # type: ignore[union-attr]
    assert one_gpu_note(report, None) is None


def test_json_for_one_gpu_is_still_one_document(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _run(capsys, "--fabric", "simulated:hgx8", "--gpus", "3", "--json")
    assert status == 0 and "one GPU selected (GPU 3)" in err
    results = json.loads(out)["results"]
    assert [(r["test"], r["src"], r["dst"]) for r in results] == [
        (t.value, 3, None) for t in GPU_TESTS]
    assert all(r["ratio"] is not None for r in results if r["test"] != "local")
