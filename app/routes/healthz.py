"""`GET /healthz`: liveness plus the database it talks to and its migration revision."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, status
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from app.db import current_revision
from app.schemas import Healthz

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Healthz, summary="Server and database liveness")
def healthz(request: Request) -> Healthz:
    """503 when the database cannot be reached, so a load balancer drops this replica."""
    engine = request.app.state.engine
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        revision = current_revision(engine)
    except SQLAlchemyError as exc:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE,
                            detail=f"database unreachable: {type(exc).__name__}") from exc
    return Healthz(status="ok", database=engine.dialect.name, schema_revision=revision)
