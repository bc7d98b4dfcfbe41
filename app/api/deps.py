"""Dependencies shared by the routes: settings, a database session, token checks.

Everything hangs off `request.app.state` (set by `create_app`), never module globals, so two
apps with different settings (tests, SQLite and PostgreSQL side by side) never mix.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Query, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import AfterValidator
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from peerwatch.app.api.keys import keyring_for
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.credentials import (
    ADMIN_TOKEN,
    FLEET_PROBE,
    Identity,
    Role,
    looks_like_credential,
    match_static,
    verify,
)
from peerwatch.probes.report import HOSTNAME_RULE, valid_hostname

bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <token>")
BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_session(request: Request) -> Iterator[Session]:
    """One session per request; the route commits what it writes, the rest is rolled back.
    A connection the database cut after the answer was sent (PostgreSQL restarting) fails
    the closing rollback: the connection is dropped, and nothing reaches the client or the
    log as an error for an answer already given."""
    session = request.app.state.sessionmaker()
    try:
        yield session
    finally:
        try:
            session.close()
        except DBAPIError:
            session.invalidate()


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session)]


def _bearer(credentials: HTTPAuthorizationCredentials | None, what: str) -> str:
    if credentials is None or not credentials.credentials:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            detail=f"missing bearer token: send 'Authorization: Bearer <{what}>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return credentials.credentials


def identify(request: Request, token: str) -> Identity | None:
    """The identity `token` proves: a derived credential, a fleet-wide probe token, or the
    admin token; None when it proves none."""
    settings: Settings = request.app.state.settings
    if looks_like_credential(token):
        return verify(keyring_for(request.app).keys(), token)
    if match_static(token, settings.probe_tokens):
        return FLEET_PROBE
    if settings.admin_token and match_static(token, [settings.admin_token]):
        return ADMIN_TOKEN
    return None


def _require(request: Request, credentials: HTTPAuthorizationCredentials | None,
             roles: tuple[Role, ...], what: str) -> Identity:
    """401 without a bearer token, 403 unless it proves one of `roles`. Checked before the
    body is read: routes read their bodies themselves (`StrictJsonRoute`), after this."""
    identity = identify(request, _bearer(credentials, what))
    if identity is None or identity.role not in roles:
        raise HTTPException(status.HTTP_403_FORBIDDEN,
                            detail=f"the bearer token is not a valid {what}")
    return identity


async def require_probe(request: Request, credentials: BearerDep) -> Identity:
    """A probe credential (its hosts), or a fleet-wide probe token. Async (no I/O): a report
    refused as too many never waits for a thread-pool slot."""
    return _require(request, credentials, (Role.PROBE,), "probe credential")


async def require_admin(request: Request, credentials: BearerDep) -> Identity:
    """A person's admin credential, or PEERWATCH_ADMIN_TOKEN."""
    return _require(request, credentials, (Role.ADMIN,), "admin credential")


async def require_actor(request: Request, credentials: BearerDep) -> Identity:
    """Who may record drain actions: a drain controller, a node's gate (its node only, which
    the route checks), or a person."""
    return _require(request, credentials, (Role.DRAIN, Role.GATE, Role.ADMIN),
                    "drain, gate or admin credential")


async def require_controller(request: Request, credentials: BearerDep) -> Identity:
    """Who may hold a scheduler's drain lease: a drain controller, or a person."""
    return _require(request, credentials, (Role.DRAIN, Role.ADMIN),
                    "drain or admin credential")


def forbidden_host(identity: Identity, host: str | None) -> HTTPException | None:
    """403 when `identity` may not speak for `host` (None: a host it does not name)."""
    if host is not None and identity.speaks_for(host):
        return None
    return HTTPException(status.HTTP_403_FORBIDDEN,
                         detail=f"{identity.name} may not speak for host "
                                f"{(host or '(none)')[:80]!r}")


# Row ids in paths: bounded by the INTEGER column, so a huge id is a 422, never a driver error.
RowId = Annotated[int, Path(ge=1, le=2**31 - 1, description="Row id.")]

# A host named in a path or a query: the rule every host name follows (422 naming it), then
# its canonical lowercase spelling, so `/hosts/GPU-17` is the host reported as `gpu-17`.
_HOST_RULE = f"Host name: {HOSTNAME_RULE}."
HostPath = Annotated[str, Path(min_length=1, max_length=253, description=_HOST_RULE,
                               examples=["gpu-node-17"]), AfterValidator(valid_hostname)]
HostQuery = Annotated[str | None, Query(min_length=1, max_length=253,
                                        description=f"Only this host. {_HOST_RULE}"),
                      AfterValidator(lambda v: None if v is None else valid_hostname(v))]

# The credential dependencies: `StrictJsonRoute` runs a route's before reading its body.
CREDENTIAL_CHECKS = (require_probe, require_admin, require_actor, require_controller)

ProbeDep = Annotated[Identity, Depends(require_probe)]
AdminDep = Annotated[Identity, Depends(require_admin)]
ActorDep = Annotated[Identity, Depends(require_actor)]
ControllerDep = Annotated[Identity, Depends(require_controller)]
