"""What a host reads while the server refuses its reports: busy, not silent.

A probe whose reports were refused (429/503, counted by `app/ingest/heard.py`) after its newest
stored one kept trying: its host is not stale, and its verdicts are as of the last judgement.
`busy_note` says so in words — "not judged since 10:20 UTC: server busy, 12 reports refused"
— for the API's host rows and health answers (and `/metrics` has the two figures).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from peerwatch.app.store.tables.inventory import Host


def refused_after(last_refused_at: datetime | None, last_received_at: datetime | None,
                  refused_reports: int | None) -> int:
    """Reports refused after the host's newest stored one (0 when none since)."""
    if last_refused_at is None or not refused_reports or (
            last_received_at is not None and last_received_at >= last_refused_at):
        return 0
    return refused_reports


def refused_since_stored(host: Host) -> int:
    return refused_after(host.last_refused_at, host.last_received_at, host.refused_reports)


def busy_note(host: Host, judged_at: datetime | None) -> str | None:
    """The words for a host whose reports the server is refusing; None when it is not."""
    refused = refused_since_stored(host)
    if not refused:
        return None
    when = f"since {judged_at:%H:%M} UTC" if judged_at is not None else "yet"
    plural = "report" if refused == 1 else "reports"
    return f"not judged {when}: server busy, {refused} {plural} refused"


def busy_fields(host: Host, judged_at: datetime | None) -> dict[str, Any]:
    """`judged_at` and the busy fields of an API answer about `host` (schemas.Busy)."""
    return {"judged_at": judged_at, "refused_reports": refused_since_stored(host),
            "last_refused_at": host.last_refused_at, "last_heard_at": host.last_heard_at,
            "busy": busy_note(host, judged_at)}
