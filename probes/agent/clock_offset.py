"""How far this probe's clock is from the server's, measured by the probe the NTP way.

The server can read a probe's clock only from when a request arrives against the time the
probe stamped on it, and that reading carries the request's transit: on a server that is
slow to take requests (overloaded, its loop starved of a core) the transit alone can pass
the one-minute skew warning, and a healthy probe is told to fix NTP. The probe knows better:
it stamps t0 when it sends, t1 when the answer is in, and the answer's `Date` is the
server's clock somewhere in between, so

    offset = Date + 0.5 s - (t0 + t1) / 2        (|error| <= (t1 - t0) / 2 + 0.5 s)

with the same sign as the server's `clock_skew_s` (positive: the probe is behind). A sample
from an exchange longer than RTT_MAX_S says too little and is dropped; the newest good one
is sent with the next request (`X-Peerwatch-Clock-Offset`), and the server takes it before
its own reading (`app/ingest/rows.py`).
"""

from __future__ import annotations

import email.utils
from datetime import datetime, timedelta

OFFSET_HEADER = "X-Peerwatch-Clock-Offset"  # seconds, the probe's measured offset
RTT_MAX_S = 10.0  # the probe's request timeout: error at most 5.5 s against a 60 s warning
OFFSET_MAX_S = 7 * 86_400.0  # past this a header is nonsense, not a clock


def offset_sample(sent: datetime, answered: datetime, date: str | None) -> float | None:
    """The offset one exchange shows (server minus probe, s); None when it cannot say."""
    rtt = (answered - sent).total_seconds()
    if not date or rtt < 0 or rtt > RTT_MAX_S:
        return None
    try:
        server = email.utils.parsedate_to_datetime(date)
    except (TypeError, ValueError, IndexError):
        return None
    if server.tzinfo is None:
        return None
    middle = sent + timedelta(seconds=rtt / 2)
    return (server + timedelta(seconds=0.5) - middle).total_seconds()


def offset_of(header: str | None) -> float | None:
    """A request's offset header as seconds; None when absent or not a sane number."""
    if not header or len(header) > 32:
        return None
    try:
        value = float(header)
    except ValueError:
        return None
    return value if abs(value) <= OFFSET_MAX_S else None
