"""Dependencies shared by the routes: settings, a database session, token checks.

Everything hangs off `request.app.state` (set by `create_app`), never module globals, so two
apps with different settings (tests, SQLite and PostgreSQL side by side) never mix.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Query, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import AfterValidator
from sqlalchemy.orm import Session

from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import HOSTNAME_RULE, valid_hostname

bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <token>")
BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_session(request: Request) -> Iterator[Session]:
    """One session per request; the route commits what it writes, the rest is rolled back."""
    with request.app.state.sessionmaker() as session:
        yield session


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session)]


def _check_token(credentials: HTTPAuthorizationCredentials | None, allowed: list[str],
                 what: str) -> str:
    if credentials is None or not credentials.credentials:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            detail=f"missing bearer token: send 'Authorization: Bearer <{what}>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    token = credentials.credentials
    # compare_digest against every token: the time taken does not reveal which one matched.
    matched = [secrets.compare_digest(token.encode(), ok.encode()) for ok in allowed]
    if not any(matched):
        if not allowed:
            detail = f"no {what} is configured on this server"
        else:
            detail = f"the bearer token is not a valid {what}"
        raise HTTPException(status.HTTP_403_FORBIDDEN, detail=detail)
    return token


async def require_probe_token(credentials: BearerDep, settings: SettingsDep) -> str:
    """401 without a bearer token, 403 with one that is not in PEERWATCH_PROBE_TOKENS.
    Async (no I/O): a report refused as too many never waits for a thread-pool slot."""
    return _check_token(credentials, settings.probe_tokens, "probe token")


def require_admin_token(credentials: BearerDep, settings: SettingsDep) -> str:
    """401 without a bearer token, 403 unless it is PEERWATCH_ADMIN_TOKEN."""
    allowed = [settings.admin_token] if settings.admin_token else []
    return _check_token(credentials, allowed, "admin token")


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

ProbeTokenDep = Annotated[str, Depends(require_probe_token)]
AdminTokenDep = Annotated[str, Depends(require_admin_token)]
