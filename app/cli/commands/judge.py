"""`peerwatch judge`: the judge process (`app/alerting/judge_worker.py`).

`serve` starts one as its child, with `--wake-fd` (the socket it sends a wake on after each
stored report, and reads the judge's figures from). Run alone (another container, another
machine), it judges whatever the database says is behind, every PEERWATCH_JUDGE_SCAN_S, and
runs the periodic round when no other judge does. Configuration: PEERWATCH_* variables.
"""

from __future__ import annotations

import argparse

from app.logs import configure_logging


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "judge", help="judge hosts whose reports are newer than their verdicts",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=None,
                        help="override PEERWATCH_DATABASE_URL (default: from the environment, "
                        "else sqlite under PEERWATCH_DATA_DIR)")
    parser.add_argument("--wake-fd", type=int, default=None,
                        help="an inherited SOCK_SEQPACKET socket to the server that started "
                        "this process (serve passes it; not for use by hand)")
    parser.add_argument("--log-level", default="info",
                        choices=["critical", "error", "warning", "info", "debug"],
                        help="log level (default: info)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from app.alerting.judge_worker import run_judge_process
    from app.cli.commands.serve import settings_from_args

    configure_logging(args.log_level)
    return run_judge_process(settings_from_args(args), args.wake_fd)
