"""Silences: label matchers, Alertmanager style, that mute matching alerts for a time.

A silenced alert keeps its state and history (it is still a fact) but is not sent to
Alertmanager and is shown as silenced. A matcher is `{"name", "value", "is_regex",
"is_equal"}` exactly as Alertmanager's API writes it; regexes are anchored like
Prometheus's. Matching a silence means matching every one of its matchers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Silence


def matcher_matches(matcher: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    value = labels.get(str(matcher["name"]), "")
    if matcher.get("is_regex"):
        hit = re.fullmatch(str(matcher["value"]), value) is not None
    else:
        hit = value == matcher["value"]
    return hit if matcher.get("is_equal", True) else not hit


def silence_matches(matchers: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    return bool(matchers) and all(matcher_matches(m, labels) for m in matchers)


def active_silences(session: Session, now: datetime) -> list[Silence]:
    query = select(Silence).where(Silence.starts_at <= now, Silence.ends_at > now)
    return list(session.scalars(query.order_by(Silence.id)))


def silenced_by(silences: Sequence[Silence], labels: Mapping[str, str]) -> list[int]:
    """Ids of the silences that mute an alert with these labels."""
    return [s.id for s in silences if silence_matches(s.matchers, labels)]
