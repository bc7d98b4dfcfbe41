"""Response shapes of `/api/v1/domains` and `/api/v1/scheduler/cliques`: rack-scale NVLink
domains (GB200 NVL72) grouped by cluster UUID and clique.

A domain's `id` is its cluster UUID as 32 lower-case hex digits. Verdicts are the stored
ones (`healthy`, `degraded`, `down`, `unknown`); the domain's own is a roll-up of them with
the reason in words (`app/analysis/domains.py`). See docs/domains.md.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.schemas.common import with_example

DOMAIN_ID = "5c3c1c9b2f7e5a41a1d0b6c7e8f90123"



class CliqueOut(BaseModel):
    clique_id: int | None = Field(description="NVML clique id (an NVLink partition).")
    hosts: list[str] = Field(description="Trays with GPUs in this clique.")
    gpus: int
    healthy_gpus: int = Field(description="GPUs judged healthy on fresh trays.")
    job_span: list[str] = Field(description="Trays whose GPUs in this clique are all healthy: "
                                            "the nodes one job may span.")


class DomainSummary(BaseModel):
    id: str = Field(description="The cluster UUID, 32 lower-case hex digits.",
                    examples=[DOMAIN_ID])
    verdict: Verdict
    reason: str
    tray_count: int
    gpu_count: int
    hosts: list[str]
    cliques: list[CliqueOut] = Field(description="Largest first.")
    fabric_states: dict[str, int] = Field(description="GPUs per fabric state.")
    fabric_health: dict[str, int] = Field(description="GPUs per fabric health summary "
                                                      "(`none`: not reported).")
    largest_healthy_clique: int | None = Field(
        description="The clique with the most wholly healthy trays (null: none).")
    job_span: list[str] = Field(description="Its healthy trays.")


class DomainsResponse(BaseModel):
    model_config = with_example({
        "generated_at": "2026-12-01T12:00:00Z",
        "domains": [{
            "id": DOMAIN_ID, "verdict": "degraded",
            "reason": "18 trays, 72 GPUs: 1 of 72 GPUs not healthy: nvl72-a-tray07 GPU2 "
                      "degraded; fabric health unhealthy on 1 GPUs; a job may span 17 "
                      "healthy trays of clique 1",
            "tray_count": 18, "gpu_count": 72, "hosts": ["nvl72-a-tray01", "..."],
            "cliques": [{"clique_id": 1, "hosts": ["nvl72-a-tray01", "..."], "gpus": 72,
                         "healthy_gpus": 71, "job_span": ["nvl72-a-tray01", "..."]}],
            "fabric_states": {"completed": 72}, "fabric_health": {"healthy": 71,
                                                                  "unhealthy": 1},
            "largest_healthy_clique": 1, "job_span": ["nvl72-a-tray01", "..."],
        }],
    })
    generated_at: datetime
    domains: list[DomainSummary]


class DomainGpuOut(BaseModel):
    gpu: int
    clique_id: int | None
    state: str | None = Field(description="Fabric state: completed, in_progress, ...")
    status: str | None
    health: str | None = Field(description="healthy, limited_capacity, unhealthy")
    health_issues: list[str] = Field(description="The health mask decoded, e.g. "
                                                 "incorrect_configuration:insufficient_nvlinks")
    verdict: Verdict = Field(description="The GPU's stored (judged) verdict.")
    reason: str


class TrayOut(BaseModel):
    host: str
    verdict: Verdict = Field(description="The host's stored verdict.")
    reason: str
    stale: bool
    gpus: list[DomainGpuOut]


class DomainDetail(DomainSummary):
    trays: list[TrayOut] = Field(description="Every tray (host) of the domain, by name.")


class TrayPickOut(BaseModel):
    host: str
    gpus: list[int]
    cuda_visible_devices: str


class CliqueFitOut(BaseModel):
    domain: str
    clique_id: int | None
    healthy_gpus: int = Field(description="Healthy GPUs the clique has in all.")
    hosts: list[TrayPickOut] = Field(description="Trays and GPUs to use, fullest first.")


class CliqueMissOut(BaseModel):
    domain: str
    clique_id: int | None
    reason: str


class CliquesResponse(BaseModel):
    model_config = with_example({
        "generated_at": "2026-12-01T12:00:00Z", "gpus": 8,
        "cliques": [{"domain": DOMAIN_ID, "clique_id": 1, "healthy_gpus": 67, "hosts": [
            {"host": "nvl72-a-tray01", "gpus": [0, 1, 2, 3],
             "cuda_visible_devices": "0,1,2,3"},
            {"host": "nvl72-a-tray02", "gpus": [0, 1, 2, 3],
             "cuda_visible_devices": "0,1,2,3"}]}],
        "left_out": [{"domain": DOMAIN_ID, "clique_id": 2,
                      "reason": "4 healthy GPUs of 4, 8 asked for"}],
    })
    generated_at: datetime
    gpus: int = Field(description="GPUs asked for (k).")
    cliques: list[CliqueFitOut] = Field(description="Cliques that can host k healthy GPUs, "
                                                    "fewest hosts first.")
    left_out: list[CliqueMissOut] = Field(description="Every other clique, with why not.")
