"""Silences: label matchers, Alertmanager style, that mute matching alerts for a time.

A silenced alert keeps its state and history (it is still a fact) but is not sent to
Alertmanager and is shown as silenced. The matchers, and how a silence matches labels,
are `app/analysis/matchers.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.matchers import silence_matches
from peerwatch.app.store.tables.alerts import Silence


def active_silences(session: Session, now: datetime) -> list[Silence]:
    query = select(Silence).where(Silence.starts_at <= now, Silence.ends_at > now)
    return list(session.scalars(query.order_by(Silence.id)))


def silenced_by(silences: Sequence[Silence], labels: Mapping[str, str]) -> list[int]:
    """Ids of the silences that mute an alert with these labels."""
    return [s.id for s in silences if silence_matches(s.matchers, labels)]
