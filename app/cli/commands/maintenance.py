"""`peerwatch maintenance HOST --for 2h`: declare a maintenance window on a running server.

Inside it the host's alerts are still computed and shown, but not paged. Talks to the
server's admin API (`POST /api/v1/maintenance`) with the admin token. Exit status: 0 done,
3 token refused, 4 request rejected, 1 server unreachable; usage errors 2.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

import httpx

from peerwatch.app.cli.credential import (
    add_token_file,
    admin_token_file,
    credential,
    token_file_help,
)
from peerwatch.app.cli.options import host_name
from peerwatch.probes.errors import BadProbeRequest

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def parse_duration(text: str) -> float:
    """Seconds in '2h', '90m', '1h30m', '45s', '1d' (BadProbeRequest naming the text)."""
    parts = DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.replace(" ", ""):
        raise BadProbeRequest(f"duration {text!r}: use a number with s, m, h or d, e.g. 2h")
    seconds = sum(float(n) * UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise BadProbeRequest(f"duration {text!r} is not positive")
    return seconds


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "maintenance", help="declare a maintenance window: no pages for a host for a while",
        description="Declare a maintenance window for HOST on a running peerwatch server. "
        "Its alerts are still computed and shown (marked 'in maintenance'), never paged.")
    parser.add_argument("host", metavar="HOST", type=host_name,
                        help="the host's name as peerwatch shows it (any case)")
    parser.add_argument("--for", dest="duration", required=True,
                        help="how long, e.g. 2h, 90m, 1h30m, 1d")
    parser.add_argument("--server", default=os.environ.get("PEERWATCH_SERVER_URL",
                                                           "http://127.0.0.1:8000"),
                        help="server base URL (default: $PEERWATCH_SERVER_URL or "
                        "http://127.0.0.1:8000)")
    add_token_file(parser, token_file_help("admin credential", "PEERWATCH_ADMIN_TOKEN",
                                           "~/.config/peerwatch/admin-token"))
    parser.add_argument("--comment", default="", help="why (default: empty)")
    parser.add_argument("--by", default=os.environ.get("USER", "cli"),
                        help="who declares it, recorded only with a shared admin token "
                        "(an issued credential names its holder; default: $USER)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, transport: httpx.BaseTransport | None = None) -> int:
    seconds = parse_duration(args.duration)
    token = credential(args.token_file, "PEERWATCH_ADMIN_TOKEN", admin_token_file())
    body = {"host": args.host, "duration_s": seconds, "created_by": args.by,
            "comment": args.comment}
    try:
        with httpx.Client(base_url=args.server.rstrip("/"), transport=transport,
                          timeout=10.0) as client:
            answer = client.post("/api/v1/maintenance", json=body,
                                 headers={"Authorization": f"Bearer {token}"})
    except httpx.HTTPError as exc:
        print(f"peerwatch maintenance: cannot reach {args.server}: {exc}")
        return 1
    if answer.status_code in (401, 403):
        print("peerwatch maintenance: the server refused the admin credential "
              f"({answer.status_code})")
        return 3
    if answer.status_code != 201:
        print(f"peerwatch maintenance: rejected ({answer.status_code}): {answer.text[:500]}")
        return 4
    window = answer.json()
    print(f"{window['host']} in maintenance from {window['starts_at']} until "
          f"{window['ends_at']} (window {window['id']}): alerts shown, not paged")
    if not window.get("host_known", True):
        print(f"peerwatch maintenance: warning: no host {window['host']!r} has reported to "
              f"{args.server} yet (a typo? the window still holds if it reports later)",
              file=sys.stderr)
    return 0
