"""One round of the pair controller: give the server's planned pairs to the scheduler, and
close the pair jobs the scheduler no longer runs (preempted, cancelled, timed out) without a
result. Nothing is decided here: the server plans (`GET /api/v1/network/plan`), the scheduler
places; a failure with one pair never stops the others."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Protocol

from peerwatch.app.pairs.client import PairsClient, ServerRefused

log = logging.getLogger("peerwatch.pairs")


class Backend(Protocol):
    name: str

    def submit(self, job_id: int, host: str, peer: str) -> str: ...

    def alive(self, scheduler_jobs: list[str]) -> set[str]: ...


@dataclass
class Round:
    submitted: list[tuple[int, str]] = field(default_factory=list)  # (pair job, scheduler job)
    failed: list[tuple[int, str]] = field(default_factory=list)  # (pair job, why)
    closed: list[int] = field(default_factory=list)  # gone from the scheduler without result


def run_round(client: PairsClient, backend: Backend, max_pairs: int) -> Round:
    out = Round()
    _close_lost(client, backend, out)
    for pair in client.plan(max_pairs):
        job = client.create_job(pair["host"], pair["peer_host"], backend.name, pair["reason"])
        try:
            sched = backend.submit(job["id"], pair["host"], pair["peer_host"])
        except (RuntimeError, OSError) as exc:
            client.move_job(job["id"], "failed", reason=f"submit: {exc}")
            out.failed.append((job["id"], str(exc)))
            continue
        client.move_job(job["id"], "submitted", scheduler_job=sched)
        out.submitted.append((job["id"], sched))
        log.info("pair job %s (%s <-> %s) is %s job %s: %s", job["id"], pair["host"],
                 pair["peer_host"], backend.name, sched, pair["reason"])
    return out


def _close_lost(client: PairsClient, backend: Backend, out: Round) -> None:
    """Submitted or running pair jobs whose scheduler job is gone: cancelled (a real job
    preempted it, or it timed out), so the planner may plan the pair again."""
    jobs = [j for state in ("submitted", "running") for j in client.jobs(state)
            if j["scheduler"] == backend.name and j["scheduler_job"]]
    alive = backend.alive([j["scheduler_job"] for j in jobs])
    for j in jobs:
        if j["scheduler_job"] not in alive:
            try:
                client.move_job(j["id"], "cancelled",
                                reason="the scheduler job ended without a result")
            except ServerRefused:  # its result arrived meanwhile: done
                continue
            out.closed.append(j["id"])
