"""A small simulated fleet on one fake clock, reporting into a real database: what the fleet
peer tests (and the browser test) judge. Every host is a `SimHost` (real ingest, real
judgement, real rules); `round()` is the leader's periodic round: recompute the peer stats,
then judge every host."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.queries.health import host_health
from peerwatch.app.records.health import HostHealth
from peerwatch.app.runtime.config import Settings
from peerwatch.probes.report import ReportKind
from peerwatch.probes.sim.faults import BandwidthFactor, Fault
from tests.app.alerting.simhost import SimHost


def host_slow(gpus: int, factor: float) -> tuple[Fault, ...]:
    """Every path of an n-GPU host delivers `factor` of its bandwidth (a whole-host slowdown)."""
    return tuple(BandwidthFactor(src=s, dst=d, factor=factor)
                 for s in range(gpus) for d in range(s + 1, gpus))


@dataclass
class PeerFleet:
    sessions: sessionmaker[Session]
    settings: Settings
    hosts: list[SimHost] = field(default_factory=list)

    def health(self, name: str) -> HostHealth:
        """The stored verdicts of host `name`, as every reader sees them."""
        with self.sessions() as s:
            return host_health(s, self.settings, name)

    def add(self, name: str, *faults: Fault, driver: str | None = None,
            preset: str = "h200x2", behind_s: float = 0.0) -> SimHost:
        """A host joining now, or `behind_s` earlier (its sweeps then catch up with the
        others': `sweeps(..., only=[it])`)."""
        host = SimHost(self.sessions, self.settings, preset=preset, hostname=name,
                       t=(self.hosts[0].t if self.hosts else 0.0) - behind_s)
        if driver is not None:
            host.fabric.preset = host.fabric.preset.model_copy(update={"driver_version": driver})
        host.inject(*faults)
        self.hosts.append(host)
        return host

    def host(self, name: str) -> SimHost:
        return next(h for h in self.hosts if h.hostname == name)

    def sweeps(self, count: int, every_s: float = 300.0,
               only: list[SimHost] | None = None) -> None:
        """`count` sweeps of every host (or `only` these), `every_s` apart, each judged as it
        arrives."""
        for _ in range(count):
            for h in only or self.hosts:
                h.step(every_s, ReportKind.SWEEP)

    def round(self) -> None:
        """The leader's periodic round at the fleet's `now`."""
        service = self.hosts[0].service
        now = self.hosts[0].now()
        service.refresh_peers(now)
        for h in self.hosts:
            service.evaluate_host(h.hostname, now)
