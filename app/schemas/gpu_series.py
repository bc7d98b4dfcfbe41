"""The answer of GET /api/v1/hosts/{host}/gpus/series (app/queries/gpu_series.py)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class GpuSeriesOut(BaseModel):
    gpu: int
    at: list[datetime] = Field(description="When each sample was taken, oldest first.")
    sm_clock_mhz: list[int | None]
    power_w: list[float | None]
    temperature_c: list[int | None]
    sm_clock_max_mhz: int | None = Field(description="The newest sample's maximum SM clock.")
    power_limit_w: float | None = Field(description="The newest sample's enforced power limit.")
    slowdown_temperature_c: int | None = Field(
        description="The newest sample's thermal slowdown threshold.")


class GpuSeriesResponse(BaseModel):
    host: str
    since: datetime
    until: datetime
    generated_at: datetime
    gpus: list[GpuSeriesOut] = Field(description="GPUs with at least one clocks sample, by index.")
