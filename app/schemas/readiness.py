"""`/healthz` and `/readyz`: is this replica alive, and can it take work."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Healthz(BaseModel):
    status: str = Field(examples=["ok"])
    database: str = Field(examples=["sqlite", "postgresql"])
    schema_revision: str | None


class IngestLoad(BaseModel):
    """This process's ingest gate: slots in use, reports waiting, and what it refused."""

    active: int = Field(examples=[2])
    receiving: int = Field(examples=[0], description="let in, their bodies still arriving")
    waiting: int = Field(examples=[0])
    concurrency: int = Field(examples=[4])
    queue: int = Field(examples=[32])
    accepted: int = Field(examples=[1200])
    refused_full: int = Field(examples=[0], description="429: the queue was full")
    refused_wait: int = Field(examples=[0], description="503: no slot within the wait")
    refused_locked: int = Field(examples=[0], description="503: the database was locked")
    client_gone: int = Field(examples=[0], description="dropped: the client had gone")
    expanding: int = Field(default=0, examples=[1], description="answered and stored whole, "
                           "still being expanded into rows (`serve`)")
    recovered: int = Field(default=0, examples=[0], description="stored whole and expanded "
                           "later by the recovery job (a worker or server stopped first)")
    expand_failed: int = Field(default=0, examples=[0], description="expansions that failed; "
                               "the report stays stored whole and is tried again")


class JudgeLoad(BaseModel):
    """This process's judge queue: hosts waiting for their judgement, and how far behind the
    reports its verdicts are (report arrival to stored verdict, recent judgements)."""

    depth: int = Field(examples=[0], description="hosts waiting for a judgement")
    in_flight: int = Field(examples=[1], description="hosts being judged now")
    workers: int = Field(examples=[2])
    judged: int = Field(examples=[1200], description="judgements done since start")
    failed: int = Field(examples=[0], description="left to the periodic round")
    lag_p50_s: float | None = Field(examples=[0.08])
    lag_p99_s: float | None = Field(examples=[0.4])
    lag_max_s: float | None = Field(examples=[0.9])
    restarts: int = Field(default=0, examples=[0], description="times the judge process "
                          "(`serve`) died and was started anew")


class Readyz(BaseModel):
    status: str = Field(examples=["ready", "busy", "unavailable"])
    database: str = Field(examples=["sqlite", "postgresql"])
    schema_revision: str | None
    detail: str | None = Field(default=None, examples=[None])
    ingest: IngestLoad
    judge: JudgeLoad | None = None
