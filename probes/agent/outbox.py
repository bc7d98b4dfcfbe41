"""Deliver reports: send now when the server answers, otherwise spool and replay later.

The outbox joins the `Sender` (what the server said), the `Spool` (where undelivered reports
wait) and a `Backoff` (when to try again). Its promise: every report handed to `submit` is
either acknowledged by the server, waiting in the spool, or set aside on disk and counted —
never silently gone. Spooled reports are replayed oldest-first as soon as the server
answers again; the server's idempotent ingest (report_id) makes a replay of a report that
did arrive harmless. One report the server keeps failing (a 5xx of its own) never blocks the
others: it backs off on its own while the rest are delivered; a 4xx sets it aside.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from peerwatch.probes.agent.quiet_log import QuietLog
from peerwatch.probes.agent.sender import Backoff, Outcome, Sender, SendResult
from peerwatch.probes.agent.spool import REJECTED_SUFFIX, AnySpool, SpoolEntry
from peerwatch.probes.heartbeat import Heartbeat
from peerwatch.probes.report import Report

log = logging.getLogger(__name__)

REPLAY_BATCH = 100  # reports per replay call, so a long backlog never starves the schedule
FAILURES_IN_A_ROW = 3  # reports failing one after another: the server, not the reports
# Answers that say the server as a whole cannot take reports now (not this one report).
SERVER_WIDE_STATUS = frozenset({408, 425, 429, 502, 503, 504})


def server_wide(answer: SendResult) -> bool:
    """No answer at all, or a status about the server rather than the report."""
    return answer.status is None or answer.status in SERVER_WIDE_STATUS


def warning_kind(answer: SendResult, one_report: bool = False) -> str:
    """The label repeated warnings about `answer` are counted under (one line a minute)."""
    if answer.status is None:
        return "server unreachable (no answer)"
    if one_report:
        return f"server failed a report (HTTP {answer.status})"
    busy = answer.status in (429, 503)
    return f"server {'busy' if busy else 'unavailable'} (HTTP {answer.status})"


class Delivery(StrEnum):
    DELIVERED = "delivered"  # the server acknowledged it
    SPOOLED = "spooled"  # waiting on disk for the server
    SET_ASIDE = "set_aside"  # the server refused it; kept on disk, counted as dropped
    LOST = "lost"  # could not even be spooled (disk full, spool too small); counted
    HEARTBEAT = "heartbeat"  # nothing changed: a heartbeat went instead (probes/heartbeat.py)
    SKIPPED = "skipped"  # nothing changed and the server is backed off from: nothing sent


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

    def __init__(self, sender: Sender, spool: AnySpool, backoff: Backoff,
                 clock: Callable[[], float], stop: threading.Event | None = None) -> None:
        self.sender = sender
        self.spool = spool
        self.backoff = backoff
        self.clock = clock
        self.stop = stop or threading.Event()
        self.stats = OutboxStats()
        self._retry_at = 0.0  # no attempt before this clock time
        # Spool entries the server failed on their own: name -> (their backoff, retry time).
        self._held: dict[str, tuple[Backoff, float]] = {}
        self._quiet = QuietLog(log, clock)  # a busy server: one line a minute per kind

    # ------------------------------------------------------------------ timing

    def ready(self) -> bool:
        """May we talk to the server now, or are we still backing off?"""
        return self.clock() >= self._retry_at

    def replay_due_at(self) -> float | None:
        """Clock time the spool should next be replayed; None when it is empty."""
        if not len(self.spool):
            return None
        held = [self._held[e.name][1] if e.name in self._held else 0.0
                for e in self.spool.entries()]
        return max(self._retry_at, min(held))

    def _due(self) -> list[SpoolEntry]:
        """Spooled reports not waiting out a backoff of their own, oldest first."""
        now, entries = self.clock(), self.spool.entries()
        names = {e.name for e in entries}
        self._held = {k: v for k, v in self._held.items() if k in names}  # evicted: forget
        return [e for e in entries if e.name not in self._held or self._held[e.name][1] <= now]

    def _hold(self, entry: SpoolEntry, report: Report, answer: SendResult) -> None:
        """This report (only) failed on the server: it waits, the others go on."""
        backoff, _ = self._held.get(entry.name) or (
            Backoff(self.backoff.initial_s, self.backoff.max_s), 0.0)
        delay = backoff.failure(at_least_s=answer.retry_after_s or 0.0)
        self._held[entry.name] = (backoff, self.clock() + delay)
        self._quiet.warning(warning_kind(answer, one_report=True),
                            "server failed report %s (%s); it waits %.0f s (attempt %d), the "
                            "other reports go on", report.report_id, answer.describe(), delay,
                            backoff.failures)

    # ------------------------------------------------------------------ sending

    def _send(self, report: Report) -> SendResult:
        answer = self.sender.send(report)
        self.stats.attempts += 1
        self.stats.last_answer = answer
        self.stats.by_outcome[answer.outcome] = self.stats.by_outcome.get(answer.outcome, 0) + 1
        if answer.outcome is Outcome.DELIVERED:
            if self.backoff.failures:
                self._quiet.flush()  # the counts of the refusals before, then the news
                log.info("server answers again (%s)", answer.describe())
            self.backoff.success()
            self._retry_at = 0.0
        elif answer.outcome is Outcome.RETRY and server_wide(answer):
            self._back_off(answer, report)
        elif answer.outcome is Outcome.UNAUTHORIZED:
            delay = self.backoff.give_up_for_now()
            self._retry_at = self.clock() + delay
            log.error("SERVER REFUSED THE PROBE (%s) at %s: check --server and this host's "
                      "credential (--token-file, PEERWATCH_PROBE_TOKEN). Reports are kept in "
                      "the spool; next try in "
                      "%.0f s.", answer.describe(), self.sender.url, delay)
        elif answer.outcome is Outcome.REJECTED:
            log.error("server rejected report %s (%s); set aside in %s, not retried",
                      report.report_id, answer.describe(), self.spool.directory)
        return answer

    def _back_off(self, answer: SendResult, report: Report) -> None:
        delay = self.backoff.failure(at_least_s=answer.retry_after_s or 0.0)
        self._retry_at = self.clock() + delay
        self._quiet.warning(warning_kind(answer),
                            "server unavailable (%s) for report %s; reports kept in the spool, "
                            "next try in %.0f s", answer.describe(), report.report_id, delay)

    def submit(self, report: Report) -> Submitted:
        """Hand over one fresh report; replays the backlog first when the server is up."""
        self._quiet.tick()  # a minute's count of repeated warnings, when one has ended
        if self.ready() and self._due():
            self.replay()
        if not self.ready() or self._due():
            return Submitted(self.keep(report), None)  # keep oldest-first order
        answer = self._send(report)
        if answer.outcome is Outcome.DELIVERED:
            self.stats.delivered += 1
            return Submitted(Delivery.DELIVERED, answer)
        if answer.outcome is Outcome.REJECTED:
            self.spool.set_aside_report(report, REJECTED_SUFFIX)
            self.stats.set_aside += 1
            return Submitted(Delivery.SET_ASIDE, answer)
        entry = self._spool(report)
        if entry is None:
            return Submitted(Delivery.LOST, answer)
        if answer.outcome is Outcome.RETRY and not server_wide(answer):
            self._hold(entry, report, answer)
        return Submitted(Delivery.SPOOLED, answer)

    def beat(self, heartbeat: Heartbeat) -> SendResult | None:
        """Send one heartbeat, never spooled (it says nothing the server could lose); None
        when the server is being backed off from (it is then skipped). A server-wide failure
        backs the outbox off as a report's would."""
        self._quiet.tick()
        if not self.ready():
            return None
        answer = self.sender.beat(heartbeat)
        self.stats.attempts += 1
        self.stats.last_answer = answer
        self.stats.by_outcome[answer.outcome] = self.stats.by_outcome.get(answer.outcome, 0) + 1
        if answer.outcome is Outcome.DELIVERED:
            self.backoff.success()
            self._retry_at = 0.0
        elif answer.outcome is Outcome.RETRY and server_wide(answer):
            delay = self.backoff.failure(at_least_s=answer.retry_after_s or 0.0)
            self._retry_at = self.clock() + delay
            self._quiet.warning(warning_kind(answer), "server unavailable (%s) for a heartbeat; "
                                "next try in %.0f s", answer.describe(), delay)
        return answer

    def keep(self, report: Report) -> Delivery:
        """Put a report in the spool without trying the server (backoff, shutdown)."""
        return Delivery.SPOOLED if self._spool(report) is not None else Delivery.LOST

    def _spool(self, report: Report) -> SpoolEntry | None:
        try:
            entry = self.spool.put(report)
        except OSError as exc:
            log.error("could not spool report %s: %s", report.report_id, exc)
            self.spool.note_lost()
            return None
        if entry is not None:
            self.stats.spooled += 1
        return entry

    def replay(self, limit: int = REPLAY_BATCH) -> int:
        """Send due spooled reports oldest-first; how many the server took.

        A report the server fails (a 5xx of its own) waits out a backoff of its own while
        the rest go on; only a server-wide failure (no answer, 429, 502-504) or several
        reports failing in a row stop the pass and back off the whole spool.
        """
        taken, failed_in_row = 0, 0
        for entry in self._due()[:limit]:
            if self.stop.is_set() or not self.ready():
                break
            report = self.spool.load(entry)
            if report is None:
                continue  # corrupt: set aside and counted by the spool; go on with the rest
            answer = self._send(report)
            if answer.outcome is Outcome.DELIVERED:
                self.spool.remove(entry)
                self._held.pop(entry.name, None)
                taken, failed_in_row = taken + 1, 0
            elif answer.outcome is Outcome.REJECTED:
                self.spool.set_aside(entry, REJECTED_SUFFIX)
                self._held.pop(entry.name, None)
                self.stats.set_aside += 1
            elif answer.outcome is Outcome.RETRY and not server_wide(answer):
                self._hold(entry, report, answer)
                failed_in_row += 1
                if failed_in_row >= FAILURES_IN_A_ROW:
                    self._back_off(answer, report)
                    break
            else:
                break
        self.stats.replayed += taken
        if taken:
            log.info("replayed %d spooled report(s); %d left", taken, len(self.spool))
        return taken

    def close(self) -> None:
        self._quiet.flush()
        self.sender.close()
        self.spool.close()
