"""`GET /api/v1/admin/check`: whether a bearer token is an admin credential, changing nothing.
The dashboard asks it when a token is typed in, so a mistyped one is said at once, not after
the first ack or silence fails."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from peerwatch.app.api.deps import AdminDep

router = APIRouter(prefix="/api/v1/admin", tags=["alerts"])


class AdminCheck(BaseModel):
    name: str = Field(description="The credential's name as acts are recorded: `admin:alice`, "
                                  "or `admin:token` for PEERWATCH_ADMIN_TOKEN.")


@router.get("/check", response_model=AdminCheck,
            summary="Whether the bearer token is an admin credential (nothing changes)")
def check_admin(admin: AdminDep) -> AdminCheck:
    return AdminCheck(name=admin.name)
