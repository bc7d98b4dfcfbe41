"""Flapping links: a port that keeps going down and coming back is not healthy while it is
up. NVML only says a port's state now, so each judgement remembers when it saw the port go
down (in the judged link's stored facts) and counts the downs within a window."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from peerwatch.app.analysis.fabric_health import LinkJudgement
from peerwatch.app.analysis.text import fmt_duration
from peerwatch.app.analysis.verdict import Verdict


def downs_now(seen: Sequence[datetime], was_down: bool, is_down: bool, now: datetime,
              window_s: float) -> list[datetime]:
    """The times the port went down within the window, this judgement's included."""
    downs = [t for t in seen if (now - t).total_seconds() <= window_s]
    if is_down and not was_down:
        downs.append(now)
    return downs


def flapping(j: LinkJudgement, downs: Sequence[datetime], limit: int,
             window_s: float) -> LinkJudgement:
    """A port that is up now but went down `limit` times within the window is degraded."""
    if j.verdict is not Verdict.HEALTHY or len(downs) < limit:
        return j
    return LinkJudgement(Verdict.DEGRADED,
                         f"GPU{j.gpu} link {j.link} is flapping: it went down {len(downs)} "
                         f"times in the last {fmt_duration(window_s)} (up now)", j.gpu, j.link,
                         flapping=True)


MAX_CHANGES = 16  # a port's state changes kept in its judged facts (the charts' event marks)


def state_changes(seen: Sequence[Sequence[str]], was_down: bool, is_down: bool,
                  now: datetime, keep: int = MAX_CHANGES) -> list[list[str]]:
    """The port's last `keep` changes between down and up, as [ISO time, "down" | "up"]:
    the link-state history the host page marks on its charts. NVML says only the state
    now, so a change is dated `now`: the newest report the judgement that first saw it read
    (a port first seen down counts as going down then)."""
    kept = [[str(at), str(state)] for at, state in seen]
    if is_down != was_down:
        kept.append([now.isoformat(), "down" if is_down else "up"])
    return kept[-keep:]
