"""`peerwatch snapshot`: this host's fabric state now, with no transfers; and diffs of two.

    peerwatch snapshot                              a short summary of the fabric now
    peerwatch snapshot --json > before.json         the versioned snapshot (probes/snapshot.py)
    peerwatch snapshot --diff before.json after.json    what changed, most serious first
    peerwatch snapshot --post URL --job-id 42 --phase prolog --spool DIR
                                                    what the Slurm prolog/epilog run

A job that died of an "uncorrectable NVLink error" naming no link is explained by the diff of
the fabric just before and just after it. Reading is quick (NVML only, no CUDA, GPUs read in
parallel: `probes/snapshot_read.py`); delivery never loses a snapshot (spooled when the
server is away: `probes/agent/snapshot_outbox.py`). Exit status: 0 done; with --diff 0 when
nothing changed and 1 when something did (like diff(1)); 2 for a bad or unreadable file or a
usage error; 1 when a snapshot could be neither delivered nor spooled.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from peerwatch.app.cli.credential import ETC, add_token_file, credential
from peerwatch.app.cli.options import host_name
from peerwatch.app.cli.snapshot_view import load_snapshot, summary
from peerwatch.probes.agent.sender import SNAPSHOTS_PATH, Sender
from peerwatch.probes.agent.snapshot_outbox import SnapshotSpool, post_snapshot
from peerwatch.probes.errors import BadProbeRequest
from peerwatch.probes.fabric_select import (
    FALLBACK_PRESET,
    fabric_choices,
    open_fabric,
    open_real_or_refuse,
)
from peerwatch.probes.snapshot import JOB_ID_RULE, Phase, Snapshot, valid_job_id
from peerwatch.probes.snapshot_diff import diff_snapshots
from peerwatch.probes.snapshot_read import take_snapshot

DIFFERENT, TROUBLE = 1, 2
POST_TIMEOUT_S = 5.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "snapshot", help="read this host's fabric state now (no transfers), or diff two",
        description="Read this host's fabric state in well under a second, with no transfers: "
        "GPUs, PCIe generation and width, NVLink ports and states, error counters, fabric "
        "registration, Fabric Manager, driver. With --diff, compare two saved snapshots.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit status: 0 done; with --diff, 0 when nothing changed and 1 when something "
        "did (like diff(1)); 2 for a bad or unreadable file or a usage error; 1 when a "
        "snapshot could be neither delivered nor spooled.\nfabrics: "
        + ", ".join(fabric_choices())
        + "\nexamples:\n  peerwatch snapshot --json > before.json\n"
        "  peerwatch snapshot --diff before.json after.json\n"
        "  peerwatch snapshot --post http://pw:8000 --job-id $SLURM_JOB_ID --phase prolog "
        "--spool /var/spool/peerwatch/snapshots")
    p.add_argument("--fabric", default="auto", metavar="NAME",
                   help=f"auto (real GPUs; else simulated:{FALLBACK_PRESET} when only "
                   "printing, an error with --post or --spool), nvml, or simulated:<preset> "
                   "(default: auto)")
    p.add_argument("--json", action="store_true",
                   help="print the snapshot (or the diff) as JSON (default: a short summary)")
    p.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), type=Path,
                   help="compare two snapshot JSON files instead of reading the fabric")
    p.add_argument("--job-id", default=None, help="the job this snapshot belongs to, e.g. "
                   f"$SLURM_JOB_ID ({JOB_ID_RULE}; default: none)")
    p.add_argument("--phase", choices=[ph.value for ph in Phase], default=Phase.MANUAL.value,
                   help="when it is taken: prolog, epilog or manual (default: manual)")
    p.add_argument("--post", metavar="URL", default=None,
                   help="send it to the peerwatch server at URL (default: print only)")
    add_token_file(p, "file holding this host's probe credential for --post (default: "
                   "$PEERWATCH_PROBE_TOKEN when set, else $PEERWATCH_PROBE_TOKEN_FILE, else "
                   "/etc/peerwatch/probe-token)")
    p.add_argument("--spool", type=Path, default=None, metavar="DIR",
                   help="with --post: keep snapshots the server did not take here, and "
                   "deliver earlier ones from here (default: none, an undelivered snapshot "
                   "is lost and the exit status is 1)")
    p.add_argument("--flush", action="store_true",
                   help="with --post and --spool: only deliver spooled snapshots")
    p.add_argument("--hostname", type=host_name, default=None,
                   help="host name of a simulated fabric (default: the preset's)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.diff:
        return run_diff(args.diff[0], args.diff[1], as_json=args.json)
    if args.job_id is not None:
        try:
            valid_job_id(args.job_id)
        except ValueError as exc:
            raise BadProbeRequest(str(exc)) from None
    if args.flush:
        if not (args.post and args.spool):
            raise BadProbeRequest("--flush needs --post URL and --spool DIR")
        return deliver(args, None)
    snap = read_now(args)
    if args.post:
        return deliver(args, snap)
    print(snap.model_dump_json(indent=1) if args.json else summary(snap))
    return 0


def read_now(args: argparse.Namespace) -> Snapshot:
    """The snapshot now. One that is posted or spooled comes from the real GPUs or from a
    simulated host named with --fabric, never from `auto`'s fallback (made-up data)."""
    if args.post or args.spool:
        fabric = open_real_or_refuse(args.fabric, hostname=args.hostname, quick=True)
    else:
        fabric = open_fabric(args.fabric, hostname=args.hostname, quick=True,
                             on_fallback=lambda m: print(f"peerwatch snapshot: {m}",
                                                         file=sys.stderr))
    try:
        workers = fabric.gpu_count() if fabric.name == "nvml" else 1
        return take_snapshot(fabric, job_id=args.job_id, phase=Phase(args.phase),
                             workers=workers)
    finally:
        fabric.close()


def deliver(args: argparse.Namespace, snap: Snapshot | None) -> int:
    if not args.post.startswith(("http://", "https://")):
        raise BadProbeRequest(f"--post needs an http:// or https:// URL, got {args.post!r}")
    spool = SnapshotSpool(args.spool) if args.spool else None
    default_file = Path(os.environ.get("PEERWATCH_PROBE_TOKEN_FILE", ETC / "probe-token"))
    token = credential(args.token_file, "PEERWATCH_PROBE_TOKEN", default_file)
    sender = Sender(args.post, token, POST_TIMEOUT_S, path=SNAPSHOTS_PATH)
    try:
        result = post_snapshot(snap, sender, spool)
    finally:
        sender.close()
    for line in result.lines:
        print(f"peerwatch snapshot: {line}", file=sys.stderr)
    return 0 if snap is None or result.kept else 1


def run_diff(before_path: Path, after_path: Path, *, as_json: bool) -> int:
    try:
        before, after = load_snapshot(before_path), load_snapshot(after_path)
    except ValueError as exc:
        print(f"peerwatch snapshot: error: {exc}", file=sys.stderr)
        return TROUBLE
    changes = diff_snapshots(before, after)
    if as_json:
        print(json.dumps([{"severity": c.severity.name.lower(), "kind": c.kind,
                           "text": c.text} for c in changes], indent=1))
    else:
        for change in changes:
            print(change.line())
    return DIFFERENT if changes else 0
