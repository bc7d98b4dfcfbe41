"""Deliver reports: send now when the server answers, otherwise spool and replay later.

The outbox joins the `Sender` (what the server said), the `Spool` (where undelivered reports
wait) and a `Backoff` (when to try again). Its promise: every report handed to `submit` is
either acknowledged by the server, waiting in the spool, or set aside on disk and counted —
never silently gone. Spooled reports are replayed oldest-first as soon as the server
answers again; the server's idempotent ingest (report_id) makes a replay of a report that
did arrive harmless.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from probes.report import Report
from probes.sender import Backoff, Outcome, Sender, SendResult
from probes.spool import REJECTED_SUFFIX, Spool

log = logging.getLogger(__name__)

REPLAY_BATCH = 100  # reports per replay call, so a long backlog never starves the schedule


class Delivery(StrEnum):
    DELIVERED = "delivered"  # the server acknowledged it
    SPOOLED = "spooled"  # waiting on disk for the server
    SET_ASIDE = "set_aside"  # the server refused it; kept on disk, counted as dropped
    LOST = "lost"  # could not even be spooled (disk full, spool too small); counted


@dataclass(frozen=True)
class Submitted:
    delivery: Delivery
    answer: SendResult | None = None  # None when no attempt was made (server in backoff)


@dataclass
class OutboxStats:
    delivered: int = 0
    replayed: int = 0
    spooled: int = 0
    set_aside: int = 0
    attempts: int = 0
    last_answer: SendResult | None = None
    by_outcome: dict[str, int] = field(default_factory=dict)


class Outbox:
    """Send-or-spool with backoff. Not thread-safe: one worker owns one outbox."""

    def __init__(self, sender: Sender, spool: Spool, backoff: Backoff,
                 clock: Callable[[], float], stop: threading.Event | None = None) -> None:
        self.sender = sender
        self.spool = spool
        self.backoff = backoff
        self.clock = clock
        self.stop = stop or threading.Event()
        self.stats = OutboxStats()
        self._retry_at = 0.0  # no attempt before this clock time

    # ------------------------------------------------------------------ timing

    def ready(self) -> bool:
        """May we talk to the server now, or are we still backing off?"""
        return self.clock() >= self._retry_at

    def replay_due_at(self) -> float | None:
        """Clock time the spool should next be replayed; None when it is empty."""
        return self._retry_at if len(self.spool) else None

    # ------------------------------------------------------------------ sending

    def _send(self, report: Report) -> SendResult:
        answer = self.sender.send(report)
        self.stats.attempts += 1
        self.stats.last_answer = answer
        self.stats.by_outcome[answer.outcome] = self.stats.by_outcome.get(answer.outcome, 0) + 1
        if answer.outcome is Outcome.DELIVERED:
            if self.backoff.failures:
                log.info("server answers again (%s)", answer.describe())
            self.backoff.success()
            self._retry_at = 0.0
        elif answer.outcome is Outcome.RETRY:
            delay = self.backoff.failure(at_least_s=answer.retry_after_s or 0.0)
            self._retry_at = self.clock() + delay
            log.warning("server unavailable (%s); report kept in the spool, next try in %.0f s",
                        answer.describe(), delay)
        elif answer.outcome is Outcome.UNAUTHORIZED:
            delay = self.backoff.give_up_for_now()
            self._retry_at = self.clock() + delay
            log.error("SERVER REFUSED THE PROBE (%s) at %s: check --server and --token "
                      "(PEERWATCH_PROBE_TOKEN). Reports are kept in the spool; next try in "
                      "%.0f s.", answer.describe(), self.sender.url, delay)
        else:
            log.error("server rejected report %s (%s); set aside in %s, not retried",
                      report.report_id, answer.describe(), self.spool.directory)
        return answer

    def submit(self, report: Report) -> Submitted:
        """Hand over one fresh report; replays the backlog first when the server is up."""
        if self.ready() and len(self.spool):
            self.replay()
        if not self.ready() or len(self.spool):
            return Submitted(self.keep(report), None)  # keep oldest-first order
        answer = self._send(report)
        if answer.outcome is Outcome.DELIVERED:
            self.stats.delivered += 1
            return Submitted(Delivery.DELIVERED, answer)
        if answer.outcome is Outcome.REJECTED:
            self.spool.set_aside_report(report, REJECTED_SUFFIX)
            self.stats.set_aside += 1
            return Submitted(Delivery.SET_ASIDE, answer)
        return Submitted(self.keep(report), answer)

    def keep(self, report: Report) -> Delivery:
        """Put a report in the spool without trying the server (backoff, shutdown)."""
        try:
            entry = self.spool.put(report)
        except OSError as exc:
            log.error("could not spool report %s: %s", report.report_id, exc)
            self.spool.note_lost()
            return Delivery.LOST
        if entry is None:
            return Delivery.LOST
        self.stats.spooled += 1
        return Delivery.SPOOLED

    def replay(self, limit: int = REPLAY_BATCH) -> int:
        """Send spooled reports oldest-first until one fails; how many the server took."""
        taken = 0
        for entry in self.spool.entries()[:limit]:
            if self.stop.is_set() or not self.ready():
                break
            report = self.spool.load(entry)
            if report is None:
                continue  # corrupt: set aside and counted by the spool; go on with the rest
            answer = self._send(report)
            if answer.outcome is Outcome.DELIVERED:
                self.spool.remove(entry)
                taken += 1
            elif answer.outcome is Outcome.REJECTED:
                self.spool.set_aside(entry, REJECTED_SUFFIX)
                self.stats.set_aside += 1
            else:
                break
        self.stats.replayed += taken
        if taken:
            log.info("replayed %d spooled report(s); %d left", taken, len(self.spool))
        return taken

    def close(self) -> None:
        self.sender.close()
        self.spool.close()
