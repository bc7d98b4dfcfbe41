"""`peerwatch pairs`: cross-host pair tests, run by the scheduler that owns the nodes.

    peerwatch pairs --scheduler slurm --partition scavenger --once   # submit the planned pairs
    peerwatch pairs --scheduler kubernetes --queue pairs --dry-run   # print the Job manifests
    peerwatch pairs rank --job 17 --server URL                       # on a node: one rank
    peerwatch pairs topology --server URL                            # Slurm topology.conf

The controller sends a drain (or admin) credential: `--token-file`, else
$PEERWATCH_DRAIN_TOKEN, else /etc/peerwatch/drain-token. A rank sends its node's probe
credential: `--token-file` (`{node}` in it is the node's name), else $PEERWATCH_PROBE_TOKEN,
else /etc/peerwatch/probe-token. docs/network.md.

Exit status: 0 done, 1 server unreachable, 2 usage, 3 refused, 4 a rank could not do its part.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import httpx

from peerwatch.app.cli.credential import ETC, add_token_file, credential
from peerwatch.app.cli.options import positive_float
from peerwatch.app.pairs.client import PairsClient, ServerRefused, ServerUnavailable
from peerwatch.app.pairs.controller import Backend, run_round
from peerwatch.app.pairs.k8s import KubernetesPairs
from peerwatch.app.pairs.rank import RankError, load_simnet, node_name, run_rank
from peerwatch.app.pairs.slurm import SlurmPairs


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "pairs", help="cross-host pair tests through Slurm or Kubernetes",
        description="Submit the server's planned host pairs as low-priority, preemptible "
        "jobs (a 2-node Slurm job in a scavenger partition, or a Kubernetes Job per pair), "
        "run one rank of such a job, or print the Slurm topology.conf.")
    p.add_argument("action", nargs="?", choices=("submit", "rank", "topology"),
                   default="submit", help="submit (default), rank or topology")
    p.add_argument("--server", default=os.environ.get("PEERWATCH_SERVER_URL",
                                                      "http://127.0.0.1:8000"),
                   help="server base URL (default: $PEERWATCH_SERVER_URL or "
                   "http://127.0.0.1:8000)")
    add_token_file(p, "file holding the credential (see the command's description)")
    p.add_argument("--scheduler", choices=("slurm", "kubernetes"), default="slurm",
                   help="which scheduler submits (default: slurm)")
    p.add_argument("--partition", default="scavenger",
                   help="Slurm partition, preemptible (default: scavenger)")
    p.add_argument("--qos", default=None, help="Slurm QOS (default: none)")
    p.add_argument("--rank-command", default="peerwatch pairs rank",
                   help="how a node runs a rank (default: peerwatch pairs rank)")
    p.add_argument("--job-output", default="/dev/null", metavar="PATTERN",
                   help="Slurm: where each pair job's ranks write (sbatch --output, e.g. "
                   "/var/log/peerwatch/pair-%%j.out; a directory the job's account can write "
                   "on every node) (default: /dev/null)")
    p.add_argument("--namespace", default="peerwatch", help="Kubernetes namespace "
                   "(default: peerwatch)")
    p.add_argument("--queue", default=None, help="Kueue LocalQueue (default: none, no Kueue)")
    p.add_argument("--priority-class", default="peerwatch-scavenger",
                   help="Kubernetes PriorityClass (default: peerwatch-scavenger)")
    p.add_argument("--image", default="ghcr.io/peerwatch/peerwatch:latest",
                   help="Kubernetes: the rank's image (default: "
                   "ghcr.io/peerwatch/peerwatch:latest)")
    p.add_argument("--max-pairs", type=int, default=16,
                   help="pairs submitted per round at most (default: 16)")
    p.add_argument("--once", action="store_true", help="one round, then exit (default: loop)")
    p.add_argument("--interval", type=positive_float, default=300.0,
                   help="seconds between rounds (default: 300)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan and what would be submitted; record nothing")
    p.add_argument("--job", type=int, default=None, help="rank: the pair job's id")
    p.add_argument("--simnet", type=Path, default=os.environ.get("PEERWATCH_PAIRS_SIMNET"),
                   help="rank: measure this simulated network (JSON) instead of NCCL "
                   "send/recv between the two nodes' GPUs (default: $PEERWATCH_PAIRS_SIMNET)")
    p.add_argument("--timeout", type=positive_float, default=10.0,
                   help="HTTP timeout, s (default: 10)")
    p.set_defaults(func=run)


def _backend(args: argparse.Namespace) -> Backend:
    if args.scheduler == "kubernetes":
        return KubernetesPairs(args.server, image=args.image, namespace=args.namespace,
                               priority_class=args.priority_class, queue=args.queue)
    return SlurmPairs(args.server, partition=args.partition, qos=args.qos,
                      rank_command=args.rank_command, output=args.job_output)


def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "topology":
            r = httpx.get(f"{args.server.rstrip('/')}/api/v1/network/topology.conf",
                          timeout=args.timeout)
            r.raise_for_status()
            sys.stdout.write(r.text)
            return 0
        if args.action == "rank":
            return _rank(args)
        return _submit(args)
    except ServerUnavailable as exc:
        print(f"peerwatch pairs: server unavailable: {exc}", file=sys.stderr)
        return 1
    except httpx.HTTPError as exc:
        print(f"peerwatch pairs: {exc}", file=sys.stderr)
        return 1
    except ServerRefused as exc:
        print(f"peerwatch pairs: refused: {exc}", file=sys.stderr)
        return 3
    except RankError as exc:
        print(f"peerwatch pairs rank: {exc}", file=sys.stderr)
        return 4


def _rank(args: argparse.Namespace) -> int:
    if args.job is None:
        print("peerwatch pairs rank: --job is required", file=sys.stderr)
        return 2
    node = node_name()
    token_file = Path(str(args.token_file).replace("{node}", node)) if args.token_file else None
    token = credential(token_file, "PEERWATCH_PROBE_TOKEN", ETC / "probe-token")
    measure = load_simnet(Path(args.simnet)).measure if args.simnet else None
    client = PairsClient(args.server, token, args.timeout)
    try:
        job = run_rank(client, args.job, node, measure)
        state = job.get("state") or client.job(args.job)["state"]  # rank 0: after its post
    finally:
        client.close()
    print(json.dumps({"node": node, "job": args.job, "state": state}))
    return 0


def _submit(args: argparse.Namespace) -> int:
    backend = _backend(args)
    token = credential(args.token_file, "PEERWATCH_DRAIN_TOKEN", ETC / "drain-token")
    client = PairsClient(args.server, token, args.timeout)
    try:
        while True:
            if args.dry_run:
                _dry_run(client, backend, args.max_pairs)
            else:
                done = run_round(client, backend, args.max_pairs)
                print(json.dumps({"submitted": done.submitted, "failed": done.failed,
                                  "closed": done.closed}), flush=True)
            if args.once:
                return 0
            time.sleep(args.interval)
    finally:
        client.close()


def _dry_run(client: PairsClient, backend: Backend, max_pairs: int) -> None:
    for i, pair in enumerate(client.plan(max_pairs), start=1):
        if isinstance(backend, KubernetesPairs):
            what: object = backend.manifest(i, pair["host"], pair["peer_host"])
        else:
            assert isinstance(backend, SlurmPairs)
            what = backend.sbatch_argv(i, pair["host"], pair["peer_host"])
        print(json.dumps({"pair": pair, "would_submit": what}))
