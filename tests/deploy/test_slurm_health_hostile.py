"""`deploy/slurm/peerwatch-slurm-health.py` fed by a hostile server and a bad node name:
scontrol is only ever asked to drain or resume this node, with a reason of one printable
line in one argument, and an answer that is not peerwatch's leaves the node alone.

The server is a real `http.server` (tests/deploy/hostile_server.py); `scontrol` a script
that records each argument it gets (no Slurm controller can be told what to answer)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from peerwatch.probes.report import HOSTNAME, HOSTNAME_RULE
from tests.deploy.hostile_server import Hostile

HEALTH = Path(__file__).resolve().parents[2] / "deploy" / "slurm" / "peerwatch-slurm-health.py"
# one record per call, each argument ended by a unit separator, so their boundaries show
SCONTROL = """#!/bin/sh
for a in "$@"; do printf '%s\037' "$a"; done >> "$SCONTROL_LOG"; printf '\036' >> "$SCONTROL_LOG"
if [ "$1" = show ]; then echo "NodeName=$3 State=IDLE Reason=none [root@2026]"; fi
"""


def _run(tmp_path: Path, url: str, node: str) -> tuple[subprocess.CompletedProcess[str], list]:
    fake = tmp_path / "scontrol"
    fake.write_text(SCONTROL)
    fake.chmod(0o755)
    log = tmp_path / "calls.log"
    done = subprocess.run([sys.executable, str(HEALTH), "--server", url, f"--node={node}",
                           "--scontrol", str(fake)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "SCONTROL_LOG": str(log)})
    calls = [call.split("\x1f")[:-1] for call in log.read_text().split("\x1e")[:-1]] \
        if log.exists() else []
    return done, [c for c in calls if c[:1] == ["update"]]


def test_its_host_rule_is_peerwatchs() -> None:
    text = HEALTH.read_text()
    assert re.search(r'_LABEL = r"(.+)"', text).group(1) in HOSTNAME.pattern  # type: ignore[union-attr]
    assert HOSTNAME_RULE.startswith(re.search(r'HOSTNAME_RULE = \("(.+?)"', text)  # type: ignore[union-attr]
                                    .group(1))


@pytest.mark.parametrize("node", ["a/b", "node-1 state=resume", "-rf", "node-1\nx", "a..b"])
def test_a_node_name_off_the_rule_is_refused_before_anything(node: str, tmp_path: Path,
                                                            hostile: Hostile) -> None:
    done, updates = _run(tmp_path, hostile.url, node)
    assert done.returncode == 2 and "breaks the rule" in done.stderr.splitlines()[-1]
    assert updates == [] and hostile.asked == []


def test_a_reason_is_one_line_in_one_argument(tmp_path: Path, hostile: Hostile) -> None:
    hostile.answer({"hosts": [{"host": "node-7", "gpus_total": 8, "healthy_gpus": [0, 1],
                               "unhealthy": [{"reason": "GPU5 down\nstate=resume\x1b[2J"},
                                             {"reason": ["nodename=other"]}]}]})
    done, updates = _run(tmp_path, hostile.url, "node-7")
    assert done.returncode == 0, done.stderr
    assert updates == [["update", "nodename=node-7", "state=drain",
                        "reason=peerwatch: 2/8 GPUs healthy: GPU5 down state=resume?[2J; "
                        "['nodename=other']"]]


def test_a_long_reason_is_cut_to_slurms_length(tmp_path: Path, hostile: Hostile) -> None:
    hostile.answer({"hosts": [], "left_out": {"node-7": "x" * 5000}})
    _done, [update] = _run(tmp_path, hostile.url, "node-7")
    assert update[-1] == "reason=peerwatch: " + "x" * (250 - len("peerwatch: "))


@pytest.mark.parametrize("answer", [[1, 2], {"hosts": "node-7"}, {"hosts": [{"host": "node-7"}]},
                                    {"hosts": [{"host": 7}]}, {"left_out": [1]},
                                    {"hosts": [{"host": "node-7", "gpus_total": "many",
                                                "healthy_gpus": []}]}])
def test_an_answer_not_of_peerwatchs_shape_leaves_the_node_alone(answer: object, tmp_path: Path,
                                                                 hostile: Hostile) -> None:
    hostile.answer(answer)
    done, updates = _run(tmp_path, hostile.url, "node-7")
    assert done.returncode == 0 and updates == [], done.stderr
    assert "node left alone" in done.stderr and "Traceback" not in done.stderr
