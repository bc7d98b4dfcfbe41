"""A drain reason says what is wrong and what to do (the catalog's action), and fits Slurm:
slurmdbd keeps a node's reason as TINYTEXT (255 bytes), so a long one is cut at a word, on a
UTF-8 character, keeping the action before the details."""

from __future__ import annotations

from datetime import UTC, datetime

from peerwatch.app.analysis import drain_actions
from peerwatch.app.analysis.xid_catalog import lookup
from peerwatch.app.drain.facts import AlertFact, GpuFact, NodeFacts
from peerwatch.app.drain.policy import Policy, faults, with_action
from peerwatch.app.drain.slurm import REASON_MAX_BYTES, reason_text

NOW = datetime(2026, 12, 1, 3, 12, tzinfo=UTC)


def test_the_catalog_names_an_action_for_each_fault_that_takes_a_node_out() -> None:
    assert drain_actions.for_reason("GPU5: all 18 NVLinks down") == drain_actions.LINKS_DOWN
    assert drain_actions.for_reason("GPU3 is missing from the newest inventory") == \
        lookup("xid", 79).action
    assert drain_actions.for_alert("GPUMissing") == lookup("xid", 79).action
    xid = ("Xid 48 on GPU2 (once): Double-bit ECC error; action: drain the host, reset the "
           "GPU (nvidia-smi -r) or reboot; replace the GPU if it recurs [R580: https://x]")
    assert drain_actions.for_reason(xid).endswith("replace the GPU if it recurs")
    assert drain_actions.for_reason("GPU1: something new") == ""
    assert drain_actions.for_host("host: no GPUs answer") == drain_actions.HOST_DOWN


def test_a_fault_reason_carries_its_action_once() -> None:
    gpu = GpuFact(5, "down", "GPU5: all 18 NVLinks down", NOW, drain_actions.LINKS_DOWN)
    [fault] = faults(Policy(), NodeFacts("n", "degraded", "", NOW, gpus_total=8, gpus=(gpu,)))
    assert fault.reason == f"GPU5 down: all 18 NVLinks down; do: {drain_actions.LINKS_DOWN}"
    fabric = ("GPU2: fabric registration failed (status x); restart nvidia-fabricmanager, "
              "then reset the GPU")
    said = with_action(fabric, "restart nvidia-fabricmanager, then reset the GPU")
    assert said.count("restart nvidia-fabricmanager") == 1
    missing = AlertFact("GPUMissing", "GPU3 is missing from n", NOW, 3, lookup("xid", 79).action)
    [fault] = faults(Policy(), NodeFacts("n", "down", "x", None, alerts=(missing,)))
    assert fault.reason.startswith("GPUMissing: GPU3 is missing from n; do: drain the host")


def test_a_long_reason_fits_slurm_keeping_the_action() -> None:
    what = "GPU5 down: " + "Ä long detail " * 40
    action = "reset the GPU (nvidia-smi -r) or reboot; then reseat the NVLink path"
    text = reason_text(f"{what}; do: {action}")
    assert len(text.encode()) <= REASON_MAX_BYTES
    assert text.startswith("peerwatch: GPU5 down: Ä long detail")
    assert text.endswith(f"…; do: {action}")
    assert "detail …" not in text and "deta…" not in text  # cut at a word
    short = reason_text("GPU5 down: all 18 NVLinks down; do: reset")
    assert short == "peerwatch: GPU5 down: all 18 NVLinks down; do: reset"
    huge = reason_text("x; do: " + "ü" * 400)
    assert len(huge.encode()) <= REASON_MAX_BYTES and huge.endswith("…")
    huge.encode().decode()  # never half a character
