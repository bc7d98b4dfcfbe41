"""The controller's side of the server's drain API (httpx): read the state, report actions,
reset the breaker. Every failure to get an answer is a `ServerUnavailable` naming the URL;
a refused admin token or a rejected body is a `ServerRefused` with the server's words."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx

from peerwatch.app.drain.facts import (
    AlertFact,
    Breaker,
    Decision,
    GpuFact,
    LeaseState,
    Mark,
    NodeFacts,
)


class ServerUnavailable(RuntimeError):
    """The server could not be reached or did not answer in time."""


class ServerRefused(RuntimeError):
    """The server answered, but refused (bad token, rejected body)."""


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def node_facts(raw: dict[str, Any]) -> NodeFacts:
    return NodeFacts(
        host=raw["host"].lower(), verdict=raw["verdict"], reason=raw["reason"],
        since=_time(raw["since"]), stale=raw["stale"], gpus_total=raw["gpus_total"],
        gpus=tuple(GpuFact(g["gpu"], g["verdict"], g["reason"], datetime.fromisoformat(
            g["since"]), g.get("action", "")) for g in raw["gpus"]),
        alerts=tuple(AlertFact(a["name"], a["summary"], datetime.fromisoformat(a["since"]),
                               a.get("gpu"), a.get("action", "")) for a in raw["alerts"]),
        maintenance_until=_time(raw["maintenance_until"]), started_at=_time(raw["started_at"]),
        nvlink_domain=raw.get("nvlink_domain"), nvlink_clique=raw.get("nvlink_clique"),
        action=raw.get("action", ""), gpu_counts=dict(raw.get("gpu_counts") or {}),
        full_sweep_at=_time(raw.get("full_sweep_at")))


def mark(raw: dict[str, Any]) -> Mark:
    return Mark(raw["host"].lower(), datetime.fromisoformat(raw["taken_out_at"]), raw["reason"],
                raw["applied"], _time(raw["clear_since"]), bool(raw.get("adopted")))


def breaker(raw: dict[str, Any], mode: str) -> Breaker:
    """A breaker tripped in the other mode (observe before act) holds nothing in this one,
    except one opened because peerwatch's state was lost: that holds in every mode."""
    lost = raw.get("cause") == "state_lost"
    is_open = bool(raw["open"]) and (raw["mode"] in (None, mode) or lost)
    return Breaker(is_open, _time(raw["opened_at"]), raw["reason"], raw["taken_out_in_window"],
                   raw.get("cause"), bool(raw.get("known", True)))


class DrainClient:
    def __init__(self, server: str, token: str | None, timeout_s: float = 10.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.server = server.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.server, headers=headers, timeout=timeout_s,
                                  transport=transport)

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        try:
            answer = self._http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise ServerUnavailable(f"cannot reach {self.server}: {exc}") from exc
        if answer.status_code >= 500:
            raise ServerUnavailable(f"{self.server}{path}: {answer.status_code}")
        if answer.status_code >= 400:
            raise ServerRefused(f"{self.server}{path}: {answer.status_code} "
                                f"{answer.text[:300]}")
        return answer.json()

    def state(self, scheduler: str, mode: str, window_s: float
              ) -> tuple[dict[str, NodeFacts], dict[str, Mark], Breaker]:
        raw = self._call("GET", "/api/v1/drain/state", params={
            "scheduler": scheduler, "mode": mode, "window_s": window_s})
        facts = {n["host"].lower(): node_facts(n) for n in raw["nodes"]}
        marks = {m["host"].lower(): mark(m) for m in raw["marks"]}
        return facts, marks, breaker(raw["breaker"], mode)

    def report(self, decision: Decision, kind: str, scheduler: str, mode: str, actor: str,
               details: dict[str, Any] | None = None) -> dict[str, Any]:
        body = {"host": decision.node or None, "scheduler": scheduler, "kind": kind,
                "mode": mode, "reason": decision.reason[:2000], "actor": actor,
                "details": {**decision.details, **(details or {})}}
        result: dict[str, Any] = self._call("POST", "/api/v1/actions", json=body)
        return result

    def reset_breaker(self, scheduler: str, by: str, comment: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/api/v1/drain/breaker/reset", json={
            "scheduler": scheduler, "by": by, "comment": comment})
        return result

    @staticmethod
    def _lease(raw: dict[str, Any]) -> LeaseState:
        return LeaseState(bool(raw["held"]), raw["holder"], _time(raw["expires_at"]))

    def lease(self, scheduler: str) -> LeaseState:
        """Who acts for `scheduler` now, without asking for it."""
        return self._lease(self._call("GET", "/api/v1/drain/lease",
                                      params={"scheduler": scheduler}))

    def take_lease(self, scheduler: str, holder: str, ttl_s: float) -> LeaseState:
        return self._lease(self._call("POST", "/api/v1/drain/lease", json={
            "scheduler": scheduler, "holder": holder, "ttl_s": ttl_s}))

    def release_lease(self, scheduler: str, holder: str) -> None:
        self._call("POST", "/api/v1/drain/lease/release",
                   json={"scheduler": scheduler, "holder": holder})
