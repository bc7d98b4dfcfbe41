"""The Slurm TaskProlog fed by a hostile server: only `export` lines of known names with
values of their form ever reach Slurm, whatever the answer holds.

The server is a real `http.server` on loopback answering what each test sets (the answers
a compromised or impersonated peerwatch could give); the script is the shipped one, run by
`sh` as slurmd runs it. The well-behaved case against a real peerwatch server is in
test_slurm_hooks.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.deploy.hostile_server import Hostile

PROLOG = Path(__file__).resolve().parents[2] / "deploy" / "slurm" / "peerwatch-taskprolog.sh"
REFUSED = "print peerwatch: the server's placement was refused; Slurm's GPUs kept\n"


def _run(hostile: Hostile, gpus: str = "2", pattern: str = "ring",
         node: str = "node-7") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PEERWATCH_URL": hostile.url, "SLURMD_NODENAME": node,
           "PEERWATCH_PATTERN": pattern, "PEERWATCH_GPUS": gpus}
    done = subprocess.run(["sh", str(PROLOG)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def test_a_good_answer_exports_the_gpus_and_nothing_else(hostile: Hostile) -> None:
    hostile.answer({"cuda_visible_devices": "3,1", "predicted_bps": 3.2e11,
                    "env": {"LD_PRELOAD": "/tmp/evil.so"}})
    done = _run(hostile)
    assert done.stdout == ("export CUDA_DEVICE_ORDER=PCI_BUS_ID\n"
                           "export CUDA_VISIBLE_DEVICES=3,1\n"
                           "print peerwatch: GPUs 3,1, predicted 320 GB/s\n")
    assert done.stderr == ""


@pytest.mark.parametrize("devices", [
    "0,1\nexport LD_PRELOAD=/tmp/evil.so",
    "0,1 LD_PRELOAD=/tmp/evil.so",
    "$(touch /tmp/peerwatch-pwned)",
    "`touch /tmp/peerwatch-pwned`",
    '0,1"; export LD_PRELOAD="/tmp/evil.so',
    "0,1'",
    "${HOME}",
    "0,1\r",
    "0," * 5000 + "1",
    "",
    ["0", "1"],
    12,
    None,
])
def test_a_hostile_device_list_exports_nothing(hostile: Hostile, devices: Any) -> None:
    hostile.answer({"cuda_visible_devices": devices, "predicted_bps": 1e11})
    done = _run(hostile)
    assert done.stdout == REFUSED
    [line] = done.stderr.splitlines()
    assert line.startswith("peerwatch-taskprolog: dropped CUDA_VISIBLE_DEVICES=")
    assert line.endswith(": not a known name with a value of its form")


@pytest.mark.parametrize(("devices", "why"), [("0,1,2", "not 2 distinct GPUs"),
                                              ("4,4", "not 2 distinct GPUs")])
def test_a_device_list_not_of_the_asked_size_exports_nothing(hostile: Hostile, devices: str,
                                                             why: str) -> None:
    hostile.answer({"cuda_visible_devices": devices})
    done = _run(hostile)
    assert done.stdout == REFUSED
    assert done.stderr == f"peerwatch-taskprolog: dropped CUDA_VISIBLE_DEVICES={devices}: {why}\n"


@pytest.mark.parametrize("bps", ["1e11\nexport LD_PRELOAD=/tmp/evil.so", True, None, -5,
                                 "NaN", {"x": 1}])
def test_a_hostile_bandwidth_is_left_out(hostile: Hostile, bps: Any) -> None:
    hostile.answer({"cuda_visible_devices": "0,1", "predicted_bps": bps})
    assert _run(hostile).stdout == ("export CUDA_DEVICE_ORDER=PCI_BUS_ID\n"
                                    "export CUDA_VISIBLE_DEVICES=0,1\n"
                                    "print peerwatch: GPUs 0,1\n")


@pytest.mark.parametrize(("body", "why"), [
    (b"[1, 2]", "answer is not a JSON object"),
    (b"\"export LD_PRELOAD=/tmp/evil.so\"", "answer is not a JSON object"),
    (b"not json\nexport LD_PRELOAD=/tmp/evil.so", "Expecting value: line 1 column 1 (char 0)"),
    (b" " * ((1 << 20) + 1), "answer over 1048576 bytes"),
])
def test_an_answer_that_is_no_placement_exports_nothing(hostile: Hostile, body: bytes,
                                                        why: str) -> None:
    hostile.answer(body)
    done = _run(hostile)
    assert done.stdout == f"print peerwatch: no placement ({why})\n"


def test_an_error_answer_exports_nothing(hostile: Hostile) -> None:
    hostile.answer({"detail": "x\nexport LD_PRELOAD=/tmp/evil.so"}, status=409)
    done = _run(hostile)
    assert done.stdout == "print peerwatch: no placement (HTTP Error 409: Conflict)\n"


def test_the_job_cannot_rewrite_the_question(hostile: Hostile) -> None:
    """PEERWATCH_GPUS and PEERWATCH_PATTERN are the job's own: they are one query value each,
    never another parameter (another host's placement)."""
    hostile.answer({"cuda_visible_devices": "0,1"})
    _run(hostile, gpus="2&host=other-node", pattern="ring&host=other-node")
    [asked] = hostile.asked
    query = parse_qs(urlsplit(asked).query)
    assert query == {"host": ["node-7"], "gpus": ["2&host=other-node"],
                     "pattern": ["ring&host=other-node"]}
