#!/usr/bin/env python3
"""Slurm node health check from peerwatch's verdicts (a `HealthCheckProgram`).

Asks the peerwatch server whether this node can take jobs (`/api/v1/scheduler/hosts`) and
drains it with peerwatch's reason when it cannot — a GPU whose NVLinks are down, a degraded
pair, a stale probe. A node the server knows but has not judged yet (its first sweep not in,
or a judge behind a burst of reports) is left as it is: no verdict is no evidence, and a
server that falls behind must not drain a cluster. A node that peerwatch drained earlier
(reason starting "peerwatch:") is resumed once it is healthy again; a drain set by anyone
else is never touched.

If the server cannot be reached the node is left alone: a monitoring outage must not drain a
cluster; nor does an answer that is not the server's shape. What the server says never
steers scontrol beyond this node's drain: the node name follows peerwatch's host name rule
(checked before anything is asked), and the reason is one line of printable text.
Standard library only, so it runs on any Slurm node.

slurm.conf:
    HealthCheckProgram=/usr/local/sbin/peerwatch-slurm-health
    HealthCheckInterval=300
and set PEERWATCH_URL in the environment of slurmd (or pass --server).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

REASON_PREFIX = "peerwatch:"
NO_VERDICT_PREFIX = "unknown:"  # `left_out` of a host with no stored verdict yet
REASON_MAX = 250
# peerwatch's host name rule (probes/report.py HOSTNAME; tests/deploy check they agree)
HOSTNAME_RULE = ("labels of letters, digits, '-' and '_' (not starting or ending with '-'), "
                 "joined by single dots, at most 253 characters")
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
HOSTNAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


class NoVerdict(Exception):
    """The server knows the node but holds no verdict for it yet: neither drain nor resume."""


def node_name(text: str) -> str:
    """An argparse type: a node name by peerwatch's host name rule."""
    if len(text) > 253 or not HOSTNAME.fullmatch(text):
        raise argparse.ArgumentTypeError(f"node name {text[:80]!r} breaks the rule: "
                                         f"{HOSTNAME_RULE}")
    return text


def one_line(value: object, limit: int = REASON_MAX) -> str:
    """Printable text on one line: what the server says stays one scontrol argument's text."""
    text = " ".join(str(value).split())
    return "".join(c if c.isprintable() else "?" for c in text)[:limit]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", default=os.environ.get("PEERWATCH_URL", "http://127.0.0.1:8000"),
                   help="peerwatch server URL (default: $PEERWATCH_URL or http://127.0.0.1:8000)")
    p.add_argument("--node", type=node_name, default=socket.gethostname().split(".")[0],
                   help="Slurm node name, as the probe reports it (default: short hostname)")
    p.add_argument("--min-healthy-gpus", type=int, default=0,
                   help="healthy GPUs the node needs; 0 means all of its GPUs (default: 0)")
    p.add_argument("--scontrol", default="scontrol", help="scontrol command (default: scontrol)")
    p.add_argument("--timeout", type=float, default=10.0, help="HTTP timeout, s (default: 10)")
    p.add_argument("--dry-run", action="store_true", help="print what would be done, do nothing")
    return p.parse_args(argv)


def fetch_hosts(server: str, min_healthy: int, timeout: float) -> dict:
    query = urllib.parse.urlencode({"min_healthy_gpus": max(min_healthy, 1)})
    url = f"{server.rstrip('/')}/api/v1/scheduler/hosts?{query}"
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.load(resp)


def judge(answer: dict, node: str, min_healthy: int) -> str | None:
    """None when the node may take jobs, else the reason to drain it (without prefix)."""
    for host in answer.get("hosts", []):
        if host["host"].lower() != node.lower():
            continue
        healthy, total = len(host["healthy_gpus"]), int(host["gpus_total"])
        if healthy >= (min_healthy or total):
            return None
        bad = "; ".join(str(u["reason"]) for u in host.get("unhealthy", []))
        return one_line(f"{healthy}/{total} GPUs healthy: {bad}")
    left_out = {str(k).lower(): v for k, v in answer.get("left_out", {}).items()}
    if node.lower() in left_out:
        said = one_line(left_out[node.lower()])
        if said.startswith(NO_VERDICT_PREFIX):
            raise NoVerdict(said)
        return said
    return "node unknown to peerwatch (is the probe running with this hostname?)"


def current_reason(scontrol: str, node: str) -> str:
    out = subprocess.run([scontrol, "show", "node", node, "--oneliner"],
                         capture_output=True, text=True, check=False).stdout
    for field in out.split():
        if field.startswith("Reason="):
            return out[out.index("Reason=") + len("Reason="):].split("[")[0].strip()
    return ""


def act(args: argparse.Namespace, reason: str | None) -> list[str] | None:
    """The scontrol command to run, or None when nothing must change."""
    ours = current_reason(args.scontrol, args.node).startswith(REASON_PREFIX)
    if reason is None:
        return [args.scontrol, "update", f"nodename={args.node}", "state=resume"] if ours else None
    text = one_line(f"{REASON_PREFIX} {reason}")
    return [args.scontrol, "update", f"nodename={args.node}", "state=drain", f"reason={text}"]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        answer = fetch_hosts(args.server, args.min_healthy_gpus, args.timeout)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"peerwatch-slurm-health: server {args.server} unreachable ({exc}); node left alone",
              file=sys.stderr)
        return 0
    try:
        reason = judge(answer, args.node, args.min_healthy_gpus)
    except NoVerdict as exc:
        print(f"peerwatch-slurm-health: {args.node}: {exc}; node left alone", file=sys.stderr)
        return 0
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        print(f"peerwatch-slurm-health: the server's answer is not peerwatch's "
              f"({one_line(repr(exc), 200)}); node left alone", file=sys.stderr)
        return 0
    command = act(args, reason)
    if command is None:
        return 0
    print("peerwatch-slurm-health: " + " ".join(command))
    if not args.dry_run:
        subprocess.run(command, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
