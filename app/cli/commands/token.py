"""`peerwatch token`: issue the credentials probes, gates, drain controllers and people use.

Run it with the server's environment (PEERWATCH_DATA_DIR or PEERWATCH_SECRET_FILE): a
credential is derived from the server's secret (`app/runtime/keyring.py`), so it is issued
again identically whenever asked and nothing is stored per credential. `issue` prints the
credential on stdout, or writes it to `--out` (mode 600), never into a log or an argv.

    peerwatch token issue --host gpu-17 --out /etc/peerwatch/probe-token   # its probe
    peerwatch token issue --host gpu-1 --host gpu-2 --out-dir creds/   # creds/gpu-1.token ...
    peerwatch token issue --gate gpu-17 --out /etc/peerwatch/gate-token    # its prolog
    peerwatch token issue --drain slurm-head1        # a drain controller
    peerwatch token issue --admin alice              # a person
    peerwatch token rotate    # a new key first; old credentials keep working
    peerwatch token retire    # only the newest key: old credentials stop working

docs/security.md says who holds which and what each can do.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.credentials import CredentialError, Role, issue, verify
from peerwatch.app.runtime.keyring import (
    KeyringError,
    ensure_keys,
    read_keys,
    retire,
    rotate,
    secret_path,
)
from peerwatch.probes.errors import BadProbeRequest


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "token", help="issue credentials; rotate or retire the secret they come from",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    issue_p = actions.add_parser("issue", help="print one credential")
    who = issue_p.add_mutually_exclusive_group(required=True)
    who.add_argument("--host", action="append", metavar="HOST",
                     help="a probe's, for this host; repeated with --out-dir, one file each")
    who.add_argument("--relay", metavar="H1,H2,...",
                     help="a relay's: one credential speaking for each host it lists")
    who.add_argument("--gate", metavar="HOST", help="a node's prolog and health check")
    who.add_argument("--drain", metavar="NAME", help="a drain controller's")
    who.add_argument("--admin", metavar="NAME", help="a person's")
    out = issue_p.add_mutually_exclusive_group()
    out.add_argument("--out", type=Path, default=None,
                     help="write it to this file (mode 600) instead of stdout")
    out.add_argument("--out-dir", type=Path, default=None,
                     help="write each --host's to DIR/HOST.token (mode 600): provisioning "
                     "many nodes at once")
    actions.add_parser("rotate", help="put a new key first; credentials of the old still work")
    actions.add_parser("retire", help="keep only the newest key; older credentials stop working")
    check_p = actions.add_parser("check", help="say what a credential (read from stdin) proves")
    check_p.set_defaults(stdin=True)
    parser.set_defaults(func=run)


def _role_and_subject(args: argparse.Namespace) -> tuple[Role, str]:
    if args.host:
        if len(args.host) > 1:
            raise BadProbeRequest("several --host need --out-dir (one file each); a relay "
                                  "speaking for several hosts is --relay H1,H2")
        return Role.PROBE, args.host[0]
    if args.relay:
        return Role.PROBE, "+".join(h.strip() for h in args.relay.split(","))
    if args.gate:
        return Role.GATE, args.gate
    if args.drain:
        return Role.DRAIN, args.drain
    return Role.ADMIN, args.admin


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(path, 0o600)  # a file that was there before keeps no wider mode


def _issued(keys: list[bytes], role: Role, subject: str) -> str:
    try:
        return issue(keys, role, subject)
    except CredentialError as exc:
        raise BadProbeRequest(f"cannot issue the credential: {exc}") from None


def _issue_each(args: argparse.Namespace, keys: list[bytes]) -> int:
    if not args.host:
        raise BadProbeRequest("--out-dir writes probe credentials: give --host (repeatable)")
    made = {host: _issued(keys, Role.PROBE, host) for host in args.host}  # all, or none
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for host, credential in made.items():
        _write_private(args.out_dir / f"{host.lower()}.token", credential + "\n")
    print(f"wrote {len(made)} probe credential(s) to {args.out_dir}", file=sys.stderr)
    return 0


def _issue(args: argparse.Namespace, path: Path) -> int:
    keys = ensure_keys(path)
    if args.out_dir is not None:
        return _issue_each(args, keys)
    role, subject = _role_and_subject(args)
    credential = _issued(keys, role, subject)
    if args.out is None:
        print(credential)
    else:
        _write_private(args.out, credential + "\n")
        print(f"wrote {args.out} ({role.value} credential for {subject})", file=sys.stderr)
    return 0


def _check(path: Path) -> int:
    identity = verify(read_keys(path), sys.stdin.readline().strip())
    if identity is None:
        print("not a credential of this server's secret", file=sys.stderr)
        return 1
    print(identity.name)
    return 0


def run(args: argparse.Namespace) -> int:
    settings = Settings()
    path = secret_path(settings.data_dir, settings.secret_file)
    try:
        if args.action == "issue":
            return _issue(args, path)
        if args.action == "check":
            return _check(path)
        keys = rotate(path) if args.action == "rotate" else retire(path)
    except KeyringError as exc:
        raise BadProbeRequest(str(exc)) from None
    print(f"{path}: {len(keys)} key(s) live; credentials are issued with the newest")
    return 0
