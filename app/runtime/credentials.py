"""Who speaks: credentials bound to a role and a subject, derived from the server's secret.

A credential reads `pw1~<role>~<subject>~<mac>`, the mac an HMAC-SHA256 of the rest under a
key of the server's keyring (`app/runtime/keyring.py`). Nothing is stored per credential:
the server checks the mac, and the role and subject it proves say what the bearer may do.

- `probe~<host>`: reports and snapshots about that host only. A relay's `probe~a+b+c`
  speaks for the hosts it lists.
- `gate~<host>`: the Slurm prolog and health check of that node: records drain actions
  about its own node only (reads need no credential).
- `drain~<name>`: a drain controller: records actions and holds the lease for any node;
  never resets the breaker.
- `admin~<person>`: silences, maintenance, acknowledgements, the breaker reset; what they
  do is recorded under `admin:<person>`.

The fleet-wide tokens of PEERWATCH_PROBE_TOKENS still work, as an opt-in the server warns
about at start (any such token speaks for every host), and PEERWATCH_ADMIN_TOKEN is an
admin credential recorded as `admin:admin-token`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from enum import StrEnum

from peerwatch.probes.report import valid_hostname

VERSION = "pw1"
SEP = "~"
HOST_SEP = "+"  # no host name holds one
MAX_RELAY_HOSTS = 256
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")  # a person's or a controller's name


class Role(StrEnum):
    PROBE = "probe"
    GATE = "gate"
    DRAIN = "drain"
    ADMIN = "admin"


class CredentialError(ValueError):
    """A subject that no credential may carry: the message names the rule."""


@dataclass(frozen=True)
class Identity:
    """What a verified credential proves. `hosts` None: any host (a fleet-wide token, a
    drain controller, a person)."""

    role: Role
    subject: str
    hosts: frozenset[str] | None

    @property
    def name(self) -> str:
        """Recorded beside what it did: `admin:alice`, `drain:slurm-head1`."""
        return f"{self.role.value}:{self.subject}"

    @property
    def shared(self) -> bool:
        """A configured token many may hold: what it names is not one person or host."""
        return self in (FLEET_PROBE, ADMIN_TOKEN)

    def recorded_as(self, claimed: str | None = None, limit: int = 128) -> str:
        """Who did it, as stored beside the act: the credential's name; for a shared token,
        with the name its bearer gave, marked as what they said."""
        said = f" (says {claimed})" if claimed and self.shared else ""
        return f"{self.name}{said}"[:limit]

    def speaks_for(self, host: str) -> bool:
        return self.hosts is None or host.lower() in self.hosts


def _subject_hosts(role: Role, subject: str) -> frozenset[str] | None:
    if role in (Role.PROBE, Role.GATE):
        hosts = subject.split(HOST_SEP)
        if role is Role.GATE and len(hosts) != 1:
            raise CredentialError("a gate credential names one host")
        if len(hosts) > MAX_RELAY_HOSTS:
            raise CredentialError(f"a relay credential names at most {MAX_RELAY_HOSTS} hosts")
        try:
            return frozenset(valid_hostname(h) for h in hosts)
        except ValueError as exc:
            raise CredentialError(str(exc)) from None
    if not _NAME.match(subject):
        raise CredentialError(f"{role.value} name {subject[:40]!r}: lowercase letters, "
                              "digits, '.', '_' and '-', 1-63 characters")
    return None


def _mac(key: bytes, message: str) -> str:
    digest = hmac.new(key, message.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def canonical_subject(role: Role, subject: str) -> str:
    """Hosts lowercase and sorted, names lowercase: one credential per subject."""
    hosts = _subject_hosts(role, subject.lower())
    return HOST_SEP.join(sorted(hosts)) if hosts is not None else subject.lower()


def issue(keys: list[bytes], role: Role, subject: str) -> str:
    """A credential for `subject` in `role`, under the newest key."""
    body = SEP.join((VERSION, role.value, canonical_subject(role, subject)))
    return f"{body}{SEP}{_mac(keys[0], body)}"


def verify(keys: list[bytes], token: str) -> Identity | None:
    """The identity `token` proves under any live key, or None. Every key is tried, so the
    time taken does not say which one matched."""
    parts = token.split(SEP)
    if len(parts) != 4 or parts[0] != VERSION:
        return None
    try:
        role = Role(parts[1])
        hosts = _subject_hosts(role, parts[2])
    except (ValueError, CredentialError):
        return None
    body = SEP.join(parts[:3])
    matched = [hmac.compare_digest(_mac(k, body), parts[3]) for k in keys]
    return Identity(role, parts[2], hosts) if any(matched) else None


def match_static(token: str, allowed: list[str]) -> bool:
    """A configured static token (fleet probe tokens, the admin token), compared against
    every one in constant time."""
    return any([secrets.compare_digest(token.encode(), ok.encode()) for ok in allowed])


def looks_like_credential(token: str) -> bool:
    return token.startswith(VERSION + SEP)


# The static tokens of the configuration, as identities.
FLEET_PROBE = Identity(Role.PROBE, "fleet-token", None)
ADMIN_TOKEN = Identity(Role.ADMIN, "admin-token", None)
