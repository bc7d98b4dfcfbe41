"""A small client for Alertmanager's API v2: `POST /api/v2/alerts`.

Alertmanager keeps an alert firing until its `endsAt`; the sender re-posts firing alerts
every resend interval with `endsAt` a few intervals ahead (Prometheus's own rule: 4x), so an
alert whose sender died resolves by itself, and posts `endsAt = now` when it resolves.
Errors are raised as `AlertmanagerUnavailable` for the caller to log and retry; this module
never decides about retries itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx


class AlertmanagerUnavailable(Exception):
    """Alertmanager could not be reached or refused the alerts."""


@dataclass(frozen=True)
class OutgoingAlert:
    """One alert as Alertmanager's API takes it (`postableAlert`)."""

    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: datetime
    ends_at: datetime
    generator_url: str = ""

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "labels": self.labels,
            "annotations": self.annotations,
            "startsAt": _rfc3339(self.starts_at),
            "endsAt": _rfc3339(self.ends_at),
        }
        if self.generator_url:
            body["generatorURL"] = self.generator_url
        return body


def _rfc3339(at: datetime) -> str:
    if at.tzinfo is None:
        raise ValueError(f"naive datetime {at!r}: Alertmanager needs a time zone")
    return at.isoformat()


class AlertmanagerClient:
    """Posts alerts to one Alertmanager (`base_url` like http://alertmanager:9093)."""

    def __init__(self, base_url: str, timeout_s: float = 5.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._client = httpx.Client(base_url=self.base_url, timeout=timeout_s,
                                    transport=transport)

    def post(self, alerts: Sequence[OutgoingAlert]) -> None:
        if not alerts:
            return
        try:
            answer = self._client.post("/api/v2/alerts", json=[a.to_json() for a in alerts])
        except httpx.HTTPError as exc:
            raise AlertmanagerUnavailable(
                f"cannot reach Alertmanager at {self.base_url}: {exc}") from exc
        if answer.status_code >= 300:
            raise AlertmanagerUnavailable(
                f"Alertmanager at {self.base_url} answered {answer.status_code}: "
                f"{answer.text[:500]}")

    def close(self) -> None:
        self._client.close()
