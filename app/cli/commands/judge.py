"""`peerwatch judge`: the judge process (`app/judging/worker.py`).

`serve` starts one as its child, with `--wake-fd` (the socket it sends a wake on after each
stored report, and reads the judge's figures from). Run alone (another container, another
machine), it judges whatever the database says is behind, every PEERWATCH_JUDGE_SCAN_S, and
runs the periodic round when no other judge does. Configuration: PEERWATCH_* variables.
"""

from __future__ import annotations

import argparse
from datetime import datetime

from peerwatch.app.cli.options import add_database_url, add_log_level, non_negative_int
from peerwatch.app.runtime.logs import configure_logging
from peerwatch.app.runtime.priority import lower_priority


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "judge", help="judge hosts whose reports are newer than their verdicts",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_database_url(parser)
    parser.add_argument("--wake-fd", type=non_negative_int, default=None,
                        help="an inherited SOCK_SEQPACKET socket to the server that started "
                        "this process (serve passes it; not for use by hand)")
    parser.add_argument("--shard", type=_shard, default=(0, 1), metavar="I/N",
                        help="judge only the I-th of N shards of the hosts, counted from 0 "
                        "(serve passes it when PEERWATCH_JUDGE_PROCESSES > 1; default: all)")
    parser.add_argument("--listening-since", type=_aware_time, default=None, metavar="TIME",
                        help="when the server this judges for started (ISO 8601 with its "
                        "offset; serve passes it): probes last heard before it get the "
                        "restart grace of PEERWATCH_PROBE_STALE_RESTART_GRACE_S (default: "
                        "none)")
    parser.add_argument("--nice", type=int, default=0, choices=range(20), metavar="N",
                        help="run N steps nicer than the caller, before any thread starts "
                        "(serve passes PEERWATCH_WORKER_NICE, so its event loop goes first; "
                        "default: 0)")
    add_log_level(parser)
    parser.set_defaults(func=run)


def _shard(text: str) -> tuple[int, int]:
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: expected I/N, e.g. 0/2") from None
    if not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: I must be 0..N-1")
    return index, count


def _aware_time(text: str) -> datetime:
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--listening-since {text!r}: not an ISO 8601 "
                                         "time") from None
    if at.tzinfo is None:
        raise argparse.ArgumentTypeError(f"--listening-since {text!r}: give its offset "
                                         "(e.g. +00:00)")
    return at


def run(args: argparse.Namespace) -> int:
    # the server's modules, imported by this command alone: `peerwatch --help` imports
    # every command's module and must not pay for them
    from peerwatch.app.cli.commands.serve import settings_from_args
    from peerwatch.app.judging.worker import run_judge_process

    lower_priority(args.nice)  # first: every thread of the judge starts at it
    configure_logging(args.log_level)
    return run_judge_process(settings_from_args(args), args.wake_fd, args.shard,
                             args.listening_since)
