"""When an inventory pass sends its full report, and when only a heartbeat (issue 37).

The server judges a host from its inventory, its jobs, its error counters, its throttle
reasons and its events; its tx/rx byte counters, utilization and clocks are the agent's
`/metrics` (a time-series store's), not the server's. So an inventory pass whose report
says nothing new of the former sends a `Heartbeat` naming the last full report the server
acknowledged; a full report goes when:

- it is the first, or the server asked for one (409: it lost the host's state);
- the fingerprint of what is judged changed (a GPU, a link, a pair, a job, an error counter
  moved, a throttle reason, the driver's health, an RDMA port's state or error counters),
  or it carries events or probe errors;
- KEYFRAME_S passed since the last full one: the server keeps each port's counters sparse
  with a moving port's row due when it is `LINK_KEYFRAME_S` old (app/store/tables/history.py,
  1170 s: one inventory pass under two of these), so its rates always have a reading to span;
- the last full report was not acknowledged (spooled): the server's copy may be older.

A sweep always goes in full (its results are new by nature).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime

from peerwatch.probes.heartbeat import Heartbeat
from peerwatch.probes.report import Report, ReportKind

KEYFRAME_S = 600.0  # a full report at least this often: the sweep's cadence (issue 37)
UNSUPPORTED_S = 3600.0  # a server without the heartbeat route: full reports for an hour
_ERROR_COUNTERS = ("replay", "recovery", "crc_flit", "crc_data", "ecc_data")
# An RDMA port's judged counters (app/analysis/nic_health.py) less port_xmit_wait: that one
# ticks with ordinary traffic, so it would send every pass in full; congestion is judged
# from its rate, which the keyframes every KEYFRAME_S still span.
_NIC_COUNTERS = ("symbol_error", "port_rcv_errors", "local_link_integrity_errors",
                 "excessive_buffer_overrun_errors", "link_downed", "port_xmit_discards",
                 "link_error_recovery")


def fingerprint(report: Report) -> str:
    """A digest of what the server judges from `report`, leaving out what only moves
    (times, tx/rx bytes, utilization, clocks and power, the agent's own cost)."""
    judged = {
        "host": report.host.model_dump(mode="json"),
        "inventory": report.inventory.model_dump(mode="json"),
        "jobs": [j.model_dump(mode="json") for j in report.jobs],
        # the newest sample: a sweep's reading before its tests is older than the one after
        "counters": [_judged_counters(c) for c in report.counters[-1:]],
    }
    return hashlib.sha256(json.dumps(judged, sort_keys=True).encode()).hexdigest()


def _judged_counters(sample: object) -> dict[str, object]:
    links = getattr(sample, "links", [])
    return {
        "links": [[p.gpu, p.link, *(getattr(p, c) for c in _ERROR_COUNTERS)] for p in links],
        "pcie_replay": {str(k): v for k, v in getattr(sample, "pcie_replay", {}).items()},
        "aer": [a.model_dump(mode="json") for a in getattr(sample, "aer", [])],
        "reasons": [[c.gpu, c.reasons] for c in getattr(sample, "clocks", [])],
        "processes": [[a.gpu, a.compute_processes] for a in getattr(sample, "activity", [])],
        "nic_ports": [[p.device, p.port, p.state, p.phys_state, p.rate_gbps,
                       *(p.counters.get(c) for c in _NIC_COUNTERS)]
                      for p in getattr(sample, "nic_ports", [])],
    }


class ChangeTracker:
    """What the server holds of this host, as far as the agent knows (one per worker)."""

    def __init__(self, keyframe_s: float = KEYFRAME_S) -> None:
        self.keyframe_s = keyframe_s
        self.base: uuid.UUID | None = None  # the newest full report the server acknowledged
        self._fingerprint: str | None = None
        self._full_at = 0.0  # clock time of that report
        self._unsupported_until = 0.0
        self.heartbeats = 0
        self.resyncs = 0

    def heartbeat_for(self, report: Report, now: float, wall: datetime) -> Heartbeat | None:
        """The heartbeat to send instead of `report`, or None: send `report` in full."""
        if (report.kind is not ReportKind.INVENTORY or self.base is None
                or now < self._unsupported_until or now - self._full_at >= self.keyframe_s
                or report.events or report.errors or fingerprint(report) != self._fingerprint):
            return None
        return Heartbeat(host=report.host.hostname, base_report_id=self.base, at=wall)

    def acknowledged(self, report: Report, now: float) -> None:
        """The server acknowledged `report` (sent in full, fresh): its new base."""
        self.base, self._fingerprint, self._full_at = report.report_id, fingerprint(report), now

    def not_acknowledged(self) -> None:
        """A full report went to the spool (or was refused): the next pass sends in full."""
        self.base = None

    def resync(self) -> None:
        """The server said it holds no state of this host (409): send the next in full."""
        self.resyncs += 1
        self.base = None

    def unsupported(self, now: float) -> None:
        """The server has no heartbeat route (an older one): full reports for a while."""
        self.base = None
        self._unsupported_until = now + UNSUPPORTED_S
