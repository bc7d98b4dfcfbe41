"""Each RDMA NIC port of a host judged from its readings over the rate window. Pure.

Like NVLink errors, a NIC's counters are lifetime totals (probes/nics.py says what each one
counts, in the kernel's words): their size says nothing, their growth says everything
(`app.analysis.rates`). A port is
- down: its newest state is not ACTIVE (DOWN, INIT, ARMED: no traffic; the physical state
  says why, e.g. Polling: no cable or no partner);
- degraded, with a finding of each kind that holds:
  - `flap`: link_downed grew: the link failed error recovery and went down, then came back
    between readings (a flapping cable, transceiver or switch port);
  - `link_errors`: symbol errors (minor errors on the physical lanes) or receive errors,
    local link integrity or buffer overrun errors grow above their limits: a dirty or
    failing cable/transceiver, before it fails;
  - `rate`: the port trained below the rate of the host's other ports of the same NIC type
    and link layer, or below its own best in the window (lanes down: 4X -> 2X, or a lower
    speed);
  - `congestion`: port_xmit_discards grew (packets dropped: the port was down or congested)
    or port_xmit_wait grew above its limit (ticks with data to send and no credit);
- healthy otherwise. A counter the NIC does not keep (no PMA) is never a finding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from peerwatch.app.analysis.verdict import Verdict

ERRORS = ("symbol_error", "port_rcv_errors", "local_link_integrity_errors",
          "excessive_buffer_overrun_errors")
FLAPS = ("link_downed",)
CONGESTION = ("port_xmit_discards", "port_xmit_wait")
JUDGED = (*ERRORS, *FLAPS, *CONGESTION, "link_error_recovery")
ACTIONS = {
    "down": "check the cable and the switch port (ibstat; phys_state says Polling: no link "
            "partner); the subnet manager must bring an IB port to ACTIVE",
    "flap": "reseat or replace the cable/transceiver; check the switch port's counters too",
    "link_errors": "clean or replace the cable/transceiver before the link fails",
    "rate": "reseat the cable (lanes down) or check the switch port's speed setting",
    "congestion": "look at the fabric: a congested switch or spine (the cross-host tests "
                  "say which); the NIC itself may be healthy",
}


@dataclass(frozen=True)
class NicLimits:
    """Growth per second tolerated (0: any growth is a finding)."""

    error_per_s: float = 0.01  # symbol/receive errors: 36 an hour
    flap_per_s: float = 0.0  # any link_downed growth
    discards_per_s: float = 0.0
    xmit_wait_per_s: float = 1e6  # ticks per second with data queued and no credit


class Reading(NamedTuple):
    """One stored reading of a port (a named tuple: a sweep reads ~800 of them back, where
    a frozen dataclass's `__init__` cost six `object.__setattr__` calls each)."""

    at: datetime
    state: str | None
    phys_state: str | None
    rate_gbps: float | None
    link_layer: str | None
    counters: Mapping[str, int]


@dataclass(frozen=True)
class NicPortJudgement:
    nic: str
    port: int
    verdict: Verdict
    reason: str
    findings: tuple[dict[str, str], ...] = ()
    rates: dict[str, float | None] = field(default_factory=dict)
    state: str | None = None
    phys_state: str | None = None
    rate_gbps: float | None = None
    expected_gbps: float | None = None
    link_layer: str | None = None
    counters: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"nic": self.nic, "port": self.port, "verdict": self.verdict.value,
                "reason": self.reason, "findings": list(self.findings), "rates": self.rates,
                "state": self.state, "phys_state": self.phys_state,
                "rate_gbps": self.rate_gbps, "expected_gbps": self.expected_gbps,
                "link_layer": self.link_layer, "counters": self.counters}


def counter_rates(readings: Sequence[Reading]) -> dict[str, float | None]:
    """Growth per second of each judged counter the port keeps (None: < 2 readings): what
    `rate_per_s` gives for each, in one pass over the readings with no list of points or
    of steps built (a port has ~100 readings in the rate window, 8 counters each, and every
    sweep judges every port: the lists were ~10 % of a sweep's CPU)."""
    names = {c for r in readings for c in r.counters if c in JUDGED}
    return {c: _rate_of(readings, c) for c in sorted(names)}


def _rate_of(readings: Sequence[Reading], name: str) -> float | None:
    """`rate_per_s([(r.at, r.counters.get(name)) for r in readings])`, the same steps summed
    in the same order: consecutive known readings, a step back in time skipped, a counter
    that went down (a reset) grown by its new value."""
    prev_at = prev = first = last = None
    total = 0
    for r in readings:
        value = r.counters.get(name)
        if value is None:
            continue
        at = r.at
        if prev is not None and at > prev_at:  # type: ignore[operator]
            total += value - prev if value >= prev else value
            if first is None:
                first = prev_at
            last = at
        prev_at, prev = at, value
    if first is None:
        return None
    span = (last - first).total_seconds()  # type: ignore[operator]
    return total / span if span > 0 else None


def expected_rates(ports: Mapping[tuple[str, int], Sequence[Reading]],
                   types: Mapping[str, str | None]) -> dict[tuple[str, int], float | None]:
    """Each port's rate to expect: the best any reading in the window showed of a port of
    the same NIC type (`types`: NIC -> hca_type) and link layer on this host."""
    best: dict[tuple[str | None, str | None], float] = {}
    for (nic, _), readings in ports.items():
        for r in readings:
            key = (types.get(nic), r.link_layer)
            if r.rate_gbps is not None:
                best[key] = max(best.get(key, 0.0), r.rate_gbps)
    return {key: best.get((types.get(key[0]), rs[-1].link_layer)) if rs else None
            for key, rs in ports.items()}


def _grew(rates: Mapping[str, float | None], names: Sequence[str], limit: float
          ) -> list[str]:
    return [f"{n} +{rate:.3g}/s" for n in names
            if (rate := rates.get(n)) is not None and rate > limit]


def findings_of(newest: Reading, rates: Mapping[str, float | None],
                expected: float | None, limits: NicLimits) -> list[tuple[str, str]]:
    """(kind, words) of every finding, worst first."""
    out = []
    if flaps := _grew(rates, FLAPS, limits.flap_per_s):
        out.append(("flap", f"flapping: {', '.join(flaps)} (the link went down and back)"))
    if errors := _grew(rates, ERRORS, limits.error_per_s):
        out.append(("link_errors", f"link errors rising: {', '.join(errors)}"))
    if (expected is not None and newest.rate_gbps is not None
            and newest.rate_gbps < expected):
        out.append(("rate", f"trained at {newest.rate_gbps:g} Gb/s, below the "
                            f"{expected:g} Gb/s of its kind on this host"))
    congested = (_grew(rates, ("port_xmit_discards",), limits.discards_per_s)
                 + _grew(rates, ("port_xmit_wait",), limits.xmit_wait_per_s))
    if congested:
        out.append(("congestion", f"congested: {', '.join(congested)}"))
    return out


def judge_port(nic: str, port: int, readings: Sequence[Reading], expected: float | None,
               limits: NicLimits) -> NicPortJudgement:
    """One port's verdict from its readings in the window, oldest first."""
    newest = readings[-1]
    rates = counter_rates(readings)
    head = f"{nic} port {port}"

    def made(verdict: Verdict, reason: str,
             findings: tuple[dict[str, str], ...] = ()) -> NicPortJudgement:
        return NicPortJudgement(nic, port, verdict, reason, findings, rates, newest.state,
                                newest.phys_state, newest.rate_gbps, expected,
                                newest.link_layer, dict(newest.counters))

    if newest.state is not None and newest.state not in ("ACTIVE", "ACTIVE_DEFER"):
        words = f"{newest.state} (physical state {newest.phys_state or 'unread'})"
        finding = {"kind": "down", "words": words, "action": ACTIONS["down"]}
        return made(Verdict.DOWN, f"{head} is {words}: {ACTIONS['down']}", (finding,))
    found = findings_of(newest, rates, expected, limits)
    if not found:
        return made(Verdict.HEALTHY, f"{head} {newest.state or 'state unread'} at "
                                     f"{newest.rate_gbps or '?'} Gb/s, no error growth")
    findings = tuple({"kind": k, "words": w, "action": ACTIONS[k]} for k, w in found)
    words = "; ".join(w for _, w in found)
    return made(Verdict.DEGRADED, f"{head} {words}: {ACTIONS[found[0][0]]}", findings)


def judge_nics(ports: Mapping[tuple[str, int], Sequence[Reading]],
               types: Mapping[str, str | None], limits: NicLimits
               ) -> list[NicPortJudgement]:
    """Every port with a reading in the window, in (NIC, port) order."""
    expected = expected_rates(ports, types)
    return [judge_port(nic, port, readings, expected[(nic, port)], limits)
            for (nic, port), readings in sorted(ports.items()) if readings]


def judged_total(ports: Sequence[Any]) -> int:
    """What the judge reads of a report's NIC ports, summed (ingest's `error_total`): the
    judged counters, a million per port not ACTIVE and each port's rate, so a reading that
    could change a NIC verdict always moves it (the fast path then judges in full)."""
    total = 0
    for p in ports:
        total += sum(v for k, v in p.counters.items() if k in JUDGED)
        total += 0 if p.state in (None, "ACTIVE", "ACTIVE_DEFER") else 1_000_000
        total += int(p.rate_gbps or 0)
    return total
