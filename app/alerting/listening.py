"""Silence counts only while a server listened: after a (re)start, a probe that was fine when
the server went away is not paged stale while it may still be in its backoff.

A probe that cannot reach the server backs off (5 s doubling to `backoff_max_s`, 300 s), so
after an outage or an upgrade the whole fleet comes back over minutes, not at once. Judged
by `last_heard_at` alone, every host not back within `stale_after_s` of the restart would
page ProbeStale: a restart read as a thousand faults. Its verdict stays stale (its GPUs are
not scheduled until it reports: nothing proves them whole), only the page waits.

Excused: a host last heard before the server started, that was fresh when the fleet's server
went quiet (`quiet_from`: the newest time any probe was heard before the start, read from
the hosts' rows), within `probe_stale_restart_grace_s` of the start. A host already silent
before the outage keeps its page; one heard after the start is judged as ever.

The PromQL twin reads the same two instants from /metrics (`listening_families`): the
oldest replica's start (one replica that stayed up means the fleet was listened to) and the
earliest `quiet_from`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from prometheus_client.core import GaugeMetricFamily, Metric
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from peerwatch.app.store.tables.inventory import Host

HEARD_COLUMNS = (Host.last_received_at, Host.last_report_at, Host.last_refused_at,
                 Host.last_heard_at)


@dataclass(frozen=True)
class Listening:
    since: datetime  # when this server began to take reports
    quiet_from: datetime | None  # the newest time any probe was heard before `since`
    grace_s: float

    def excuses(self, heard: datetime | None, now: datetime, stale_after_s: float) -> bool:
        """Whether a host's silence began while no server listened (see the module)."""
        if self.quiet_from is None or heard is None or heard >= self.since:
            return False
        if (now - self.since).total_seconds() >= self.grace_s:
            return False
        return (self.quiet_from - heard).total_seconds() <= stale_after_s


def quiet_from(session: Session, since: datetime) -> datetime | None:
    """The newest time the server heard any probe before `since` (None: a fleet never
    heard, a first start)."""
    row = session.execute(select(*(func.max(c).filter(c < since) for c in HEARD_COLUMNS)))
    times = [t for t in row.one() if t is not None]
    return max(times) if times else None


def listening_families(listening: Listening) -> Iterator[Metric]:
    """This replica's start and the fleet's quiet instant, for ProbeStale's twin."""
    started = GaugeMetricFamily(
        "peerwatch_server_listening_since_timestamp_seconds",
        "When this server replica began to take probe reports (its start).")
    started.add_metric([], listening.since.timestamp())
    yield started
    quiet = GaugeMetricFamily(
        "peerwatch_server_quiet_from_timestamp_seconds",
        "The newest time any probe was heard before this replica started: when the fleet's "
        "server went quiet (absent on a first start).")
    if listening.quiet_from is not None:
        quiet.add_metric([], listening.quiet_from.timestamp())
    yield quiet
