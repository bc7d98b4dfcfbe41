"""The pair controller's and the ranks' side of the server's network API (httpx). Every
failure to get an answer is a `ServerUnavailable`; a refusal a `ServerRefused` with the
server's words."""

from __future__ import annotations

from typing import Any

import httpx


class ServerUnavailable(RuntimeError):
    """The server could not be reached or did not answer in time."""


class ServerRefused(RuntimeError):
    """The server answered, but refused (credential, body, state)."""


class PairsClient:
    def __init__(self, base_url: str, token: str, timeout_s: float = 10.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.base = base_url.rstrip("/")
        self._http = httpx.Client(base_url=self.base, timeout=timeout_s, transport=transport,
                                  headers={"Authorization": f"Bearer {token}"})

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        try:
            r = self._http.request(method, f"/api/v1/network{path}", **kw)
        except httpx.HTTPError as exc:
            raise ServerUnavailable(f"{self.base}: {exc}") from exc
        if r.status_code >= 500:
            raise ServerUnavailable(f"{self.base}: HTTP {r.status_code}")
        if r.status_code >= 400:
            raise ServerRefused(f"{method} {path}: HTTP {r.status_code}: {r.text[:500]}")
        return r.json()

    def plan(self, max_pairs: int) -> list[dict[str, Any]]:
        return list(self._call("GET", "/plan", params={"max_pairs": max_pairs})["pairs"])

    def create_job(self, host: str, peer: str, scheduler: str, reason: str) -> dict[str, Any]:
        return dict(self._call("POST", "/jobs", json={
            "host": host, "peer_host": peer, "scheduler": scheduler, "reason": reason[:500]}))

    def move_job(self, job_id: int, state: str, scheduler_job: str | None = None,
                 reason: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"state": state}
        if scheduler_job is not None:
            body["scheduler_job"] = scheduler_job
        if reason is not None:
            body["reason"] = reason[:500]
        return dict(self._call("PATCH", f"/jobs/{job_id}", json=body))

    def jobs(self, state: str) -> list[dict[str, Any]]:
        return list(self._call("GET", "/jobs", params={"state": state})["jobs"])

    def job(self, job_id: int) -> dict[str, Any]:
        return dict(self._call("GET", f"/jobs/{job_id}"))

    def join(self, job_id: int, rank: int, host: str, address: str = "") -> dict[str, Any]:
        return dict(self._call("POST", f"/jobs/{job_id}/ranks",
                               json={"rank": rank, "host": host, "address": address}))

    def put_rendezvous(self, job_id: int, host: str, nccl_id: str) -> dict[str, Any]:
        return dict(self._call("PUT", f"/jobs/{job_id}/rendezvous",
                               json={"host": host, "nccl_id": nccl_id}))

    def rendezvous(self, job_id: int, host: str) -> dict[str, Any]:
        """The job's state and rank 0's NCCL id (None until put): a rank's credential."""
        return dict(self._call("GET", f"/jobs/{job_id}/rendezvous", params={"host": host}))

    def post_results(self, host: str, job_id: int, results: list[dict[str, Any]]
                     ) -> dict[str, Any]:
        return dict(self._call("POST", "/results",
                               json={"host": host, "job_id": job_id, "results": results}))
