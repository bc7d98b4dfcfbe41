"""`peerwatch drain`: take nodes peerwatch cannot trust out of the scheduler, put them back.

A loop (or `--once`) over the whole fleet; `--dry-run` prints the decisions and changes
nothing; the policy's `mode: observe` (the default) records on the server what would have
been done, `mode: act` does it. `--health-check` is Slurm's HealthCheckProgram (this node
only, well within Slurm's 60 s); `--gate` is the prolog's question about this node;
`--reset-breaker` is the person closing the breaker. docs/drain.md.

Exit status: 0 done (gate: keep the node), 1 server unreachable (never in --health-check or
--gate), 3 token refused, 2 usage or policy error; --gate: 10 take the node out (it was, in
act mode), 75 could not judge (server unreachable, node unknown): the prolog lets the job run.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path

from peerwatch.app.cli.credential import ETC, add_token_file, admin_token_file, credential
from peerwatch.app.cli.options import host_name, positive_float
from peerwatch.app.drain.client import DrainClient, ServerRefused, ServerUnavailable
from peerwatch.app.drain.controller import Leader, ServerLease, run_round
from peerwatch.app.drain.gate import KEEP, REFUSE, UNKNOWN, gate
from peerwatch.app.drain.k8s import KubernetesBackend
from peerwatch.app.drain.policy import Policy, PolicyError, load_policy
from peerwatch.app.drain.preview import FleetPreview
from peerwatch.app.drain.round_lock import LockUnavailable, node_round
from peerwatch.app.drain.slurm import SlurmBackend
from peerwatch.probes.errors import BadProbeRequest

GATE_TAKE_OUT = REFUSE
GATE_UNKNOWN = UNKNOWN


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "drain", help="take bad nodes out of Slurm/Kubernetes and put them back",
        description="Read peerwatch's verdicts, decide per node with the policy, act through "
        "the scheduler (only with mode: act), and report every action to the server.")
    p.add_argument("--server", default=os.environ.get("PEERWATCH_SERVER_URL",
                                                      "http://127.0.0.1:8000"),
                   help="server base URL (default: $PEERWATCH_SERVER_URL or "
                   "http://127.0.0.1:8000)")
    add_token_file(p, "file holding the credential: the loop's drain credential (default: "
                   "$PEERWATCH_DRAIN_TOKEN, else /etc/peerwatch/drain-token); --gate's and "
                   "--health-check's the node's gate credential ($PEERWATCH_GATE_TOKEN, else "
                   "/etc/peerwatch/gate-token); --reset-breaker's a person's admin credential "
                   "($PEERWATCH_ADMIN_TOKEN, else ~/.config/peerwatch/admin-token)")
    p.add_argument("--policy", default=os.environ.get("PEERWATCH_DRAIN_POLICY"),
                   help="policy YAML (default: $PEERWATCH_DRAIN_POLICY, else the built-in "
                   "defaults in observe mode; see deploy/drain/policy.yaml)")
    p.add_argument("--scheduler", choices=("slurm", "kubernetes", "none"), default="slurm",
                   help="which scheduler (default: slurm); none: every host the server "
                   "knows, as if in service (with --dry-run or mode: observe)")
    p.add_argument("--scontrol", default="scontrol", help="scontrol command (default: scontrol)")
    p.add_argument("--kubeconfig", default=None,
                   help="Kubernetes: kubeconfig file (default: in-cluster, else ~/.kube/config)")
    p.add_argument("--once", action="store_true", help="one round, then exit (default: loop)")
    p.add_argument("--interval", type=positive_float, default=60.0,
                   help="seconds between rounds of the loop (default: 60)")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would be done; change and record nothing")
    p.add_argument("--node", type=host_name, default=None,
                   help="act on this node only (default: every node)")
    p.add_argument("--health-check", action="store_true",
                   help="Slurm HealthCheckProgram: one round for this node (--node, default "
                   "the short host name); an unreachable server leaves it alone")
    p.add_argument("--gate", action="store_true",
                   help="prolog gate for this node: exit 0 keep, 10 take out, 75 could not judge")
    p.add_argument("--reset-breaker", action="store_true",
                   help="close the breaker (a person looked); with --by and --comment")
    p.add_argument("--by", default=os.environ.get("USER", "cli"),
                   help="who resets the breaker, recorded only with a shared admin token (an "
                   "issued credential names its holder; default: $USER)")
    p.add_argument("--comment", default="", help="why the breaker is reset (default: empty)")
    p.add_argument("--timeout", type=positive_float, default=10.0,
                   help="HTTP timeout, s (default: 10)")
    p.add_argument("--lease-ttl", type=float, default=None,
                   help="one controller acts per scheduler: the lease this one holds lapses "
                   "after this many seconds without a round (default: 3 x --interval, at "
                   "least 30)")
    p.add_argument("--lease-namespace", default=os.environ.get("POD_NAMESPACE", "peerwatch"),
                   help="Kubernetes: the namespace of the Lease object (default: "
                   "$POD_NAMESPACE or peerwatch)")
    p.add_argument("--job", default=os.environ.get("SLURM_JOB_ID"),
                   help="--gate: the job it answers for; a refused job's AdminComment says "
                   "why (default: $SLURM_JOB_ID)")
    p.set_defaults(func=run)


def _policy(args: argparse.Namespace) -> Policy:
    if not args.policy:
        return Policy()
    try:
        return load_policy(Path(args.policy).read_text(), args.policy)
    except ModuleNotFoundError as exc:  # PyYAML: the drain extra
        raise BadProbeRequest(f"reading a policy file needs {exc.name}: "
                              "pip install 'peerwatch[drain]'") from exc
    except OSError as exc:
        raise BadProbeRequest(f"policy {args.policy}: {exc.strerror}") from exc
    except PolicyError as exc:
        raise BadProbeRequest(str(exc)) from exc


def _backend(args: argparse.Namespace, client):
    if args.scheduler == "none":
        return FleetPreview(client)
    if args.scheduler == "kubernetes":
        try:
            return KubernetesBackend.connect(args.kubeconfig, taint=_policy(args).taint)
        except ModuleNotFoundError as exc:
            raise BadProbeRequest(f"--scheduler kubernetes needs {exc.name}: "
                                  "pip install 'peerwatch[drain-k8s]'") from exc
    return SlurmBackend(args.scontrol)


def _credential(args: argparse.Namespace) -> str:
    """The credential this use of the command needs: each can do only its own part."""
    if args.reset_breaker:
        return credential(args.token_file, "PEERWATCH_ADMIN_TOKEN", admin_token_file())
    if args.gate or args.health_check:
        return credential(args.token_file, "PEERWATCH_GATE_TOKEN", ETC / "gate-token")
    return credential(args.token_file, "PEERWATCH_DRAIN_TOKEN", ETC / "drain-token")


def _say(line: str) -> None:
    print(line, flush=True)  # a loop's lines reach a pipe (kubectl logs, journald) as they come


def _leader(args: argparse.Namespace, backend, client: DrainClient,
            take: bool) -> Leader | None:
    """The lease this controller acts under; none where nothing can act (--scheduler none)."""
    holder = f"{socket.gethostname().split('.')[0]}:{os.getpid()}"
    ttl = args.lease_ttl or max(30.0, 3 * args.interval)
    if args.scheduler == "kubernetes":
        return Leader(backend.lease(args.lease_namespace), holder, ttl, take)
    if args.scheduler == "slurm":
        return Leader(ServerLease(client, args.scheduler), holder, ttl, take)
    return None


def _gate(args, policy, backend, client, actor: str) -> int:
    say = lambda s: print(f"peerwatch gate: {s}")  # noqa: E731
    try:
        answer = gate(policy, backend, client, actor, args.node, say=say,
                      leader=_leader(args, backend, client, take=False))
    except (ServerUnavailable, ServerRefused, RuntimeError) as exc:
        print(f"peerwatch gate: could not judge {args.node}: {exc}", file=sys.stderr)
        return GATE_UNKNOWN
    if answer.status == REFUSE:
        text = f"peerwatch refused job {args.job or ''} on {args.node}: {answer.reason}"
        print(" ".join(text.split()), file=sys.stderr)
        note = getattr(backend, "note_job", None)
        if args.job and note is not None:
            try:
                note(args.job, f"peerwatch: not started on {args.node}: {answer.reason}")
            except RuntimeError as exc:
                print(f"peerwatch gate: job {args.job} not annotated: {exc}", file=sys.stderr)
    return answer.status if answer.status in (REFUSE, UNKNOWN) else KEEP


def _loop(args, policy, backend, client, actor: str) -> int:
    leader = None if args.dry_run else _leader(args, backend, client, not args.health_check)
    try:
        while True:
            try:
                run_round(policy, backend, client, actor, dry_run=args.dry_run, only=args.node,
                          say=_say, leader=leader)
            except ServerUnavailable as exc:
                print(f"peerwatch drain: {exc}; nothing done this round", file=sys.stderr)
                if args.once or args.health_check:
                    return 0 if args.health_check else 1
            except ServerRefused:
                raise
            except RuntimeError as exc:  # the scheduler's command failed (SlurmError, ...)
                print(f"peerwatch drain: {exc}; nothing done this round", file=sys.stderr)
                if args.once or args.health_check:
                    return 0 if args.health_check else 1
            if args.once or args.health_check:
                return 0
            time.sleep(args.interval)
    finally:
        if leader is not None and leader.take:
            _release(leader)


def _health_check(args, policy, backend, client, actor: str) -> int:
    """One round for this node, never beside another (app/drain/round_lock.py)."""
    try:
        with node_round(args.node) as held:
            if not held:
                print(f"peerwatch drain: another health-check round for {args.node} is still "
                      "running; this one does nothing", file=sys.stderr)
                return 0
            return _loop(args, policy, backend, client, actor)
    except LockUnavailable as exc:  # acting unlocked beats never acting: overlaps are rare
        print(f"peerwatch drain: no round lock ({exc}); acting without it", file=sys.stderr)
        return _loop(args, policy, backend, client, actor)


def _release(leader: Leader) -> None:
    """A loop (or one round) that stops gives the lease back: another acts at once."""
    try:
        leader.lease.release(leader.holder)
    except (ServerUnavailable, ServerRefused, RuntimeError):
        pass  # it lapses after its ttl


def _own_name() -> str:
    """This machine's short name, by the rule every host name follows."""
    name = socket.gethostname().split(".")[0]
    try:
        return host_name(name)
    except argparse.ArgumentTypeError as exc:
        raise BadProbeRequest(f"this machine's name: {exc}; pass --node") from None


def run(args: argparse.Namespace) -> int:
    if (args.health_check or args.gate) and not args.node:
        args.node = _own_name()
    token = _credential(args) if args.reset_breaker or not args.dry_run else None
    client = DrainClient(args.server, token, args.timeout)
    actor = f"peerwatch-drain@{socket.gethostname().split('.')[0]}"
    try:
        if args.reset_breaker:
            done = client.reset_breaker(args.scheduler, args.by, args.comment)
            print(f"breaker for {args.scheduler} reset by {done['actor']}: {done['reason']}")
            return 0
        policy = _policy(args)
        try:
            backend = _backend(args, client)
        except RuntimeError as exc:  # KubernetesError: no configuration
            print(f"peerwatch drain: {exc}", file=sys.stderr)
            return 0 if args.health_check else GATE_UNKNOWN if args.gate else 1
        if args.gate:
            return _gate(args, policy, backend, client, actor)
        if args.health_check:
            return _health_check(args, policy, backend, client, actor)
        return _loop(args, policy, backend, client, actor)
    except ServerRefused as exc:
        print(f"peerwatch drain: the server refused: {exc}", file=sys.stderr)
        return 3
    finally:
        client.close()
