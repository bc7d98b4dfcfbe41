"""The live demo fleet: one real probe worker per simulated host, and a fault director.

Each host runs the production worker (`probes.agent.runner.open_runtime`: worker, outbox,
                                      spool,
HTTP sender) in its own thread against the demo's server over real HTTP, on accelerated
intervals. A director thread applies the scenario every second: faults that start, change
or end, and hosts that fall silent (their worker is stopped, as if the node had died).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from peerwatch.app.demo.faults import apply_faults
from peerwatch.app.demo.fleet import DemoHost
from peerwatch.app.demo.gpu_jobs import map_host
from peerwatch.app.demo.scenario import Scenario
from peerwatch.probes.agent.outbox import Delivery
from peerwatch.probes.agent.runner import ProbeRuntime, open_runtime
from peerwatch.probes.agent.worker import thread_usage
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.report import utcnow
from peerwatch.probes.sim.simulated import SimulatedFabric

log = logging.getLogger(__name__)
DIRECTOR_TICK_S = 1.0


@dataclass(frozen=True)
class LiveIntervals:
    inventory_s: float = 5.0
    sweep_s: float = 30.0
    sweep_jitter_s: float = 5.0


@dataclass
class LiveHost:
    host: DemoHost
    fabric: SimulatedFabric
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    runtime: ProbeRuntime | None = None

    def delivered(self) -> int:
        if self.runtime is None:
            return 0
        return self.runtime.worker.stats.deliveries.get(Delivery.DELIVERED, 0)

    def answered(self) -> bool:
        """Whether its first report has had its outcome (delivered, or spooled: refused or
        unreachable), or the host stopped first (silent by the scenario, or crashed)."""
        if self.stop.is_set():
            return True
        return self.runtime is not None and sum(self.runtime.worker.stats.deliveries.values()) > 0


class LiveFleet:
    def __init__(self, fleet: list[DemoHost], scenario: Scenario, server_url: str,
                 credential_for: Callable[[str], str], spool_root: Path,
                 intervals: LiveIntervals | None = None) -> None:
        """`credential_for(host)`: the probe credential of that host, as a real fleet's
        probes each hold their own."""
        self.scenario = scenario
        self.server_url, self.credential_for = server_url, credential_for
        self.spool_root = spool_root
        self.mapping_root = spool_root.parent / "job-mapping"  # each host's, as a prolog writes
        self.intervals = intervals or LiveIntervals()
        self.hosts = [LiveHost(h, SimulatedFabric(h.preset, seed=h.seed, hostname=h.name,
                                                  rack=h.rack))
                      for h in fleet]
        self.stop_all = threading.Event()
        self.started_at = 0.0
        self._director = threading.Thread(target=self._direct, name="demo-director",
                                          daemon=True)

    def reporting(self) -> int:
        """How many hosts have had at least one report delivered."""
        return sum(1 for live in self.hosts if live.delivered() > 0)

    def answered(self) -> int:
        """How many hosts' first reports have had their outcome (`LiveHost.answered`)."""
        return sum(1 for live in self.hosts if live.answered())

    def elapsed(self) -> float:
        return time.monotonic() - self.started_at

    def start(self) -> None:
        self.started_at = time.monotonic()
        self._apply(0.0)  # faults that hold from the start are there for the first report
        for i, live in enumerate(self.hosts):
            live.thread = threading.Thread(target=self._run_host, args=(live, i),
                                           name=f"demo-{live.host.name}", daemon=True)
            live.thread.start()
        self._director.start()

    def _settings(self, host: DemoHost) -> ProbeSettings:
        i, pace = self.intervals, host.pace
        return ProbeSettings(server_url=self.server_url, token=self.credential_for(host.name),
                             hostname=host.name,
                             fabric=f"simulated:{host.preset}",
                             spool_dir=self.spool_root / host.name,
                             inventory_interval_s=i.inventory_s * pace,
                             sweep_interval_s=i.sweep_s * pace,
                             sweep_jitter_s=i.sweep_jitter_s * pace, backoff_initial_s=1.0,
                             backoff_max_s=10.0, request_timeout_s=30.0,
                             job_mapping_dir=self.mapping_root / host.name,
                             kubelet_socket=None)

    def first_report_s(self, i: int) -> float:
        """When host `i` starts, seconds after the fleet: the hosts spread evenly over one
        inventory interval, as a fleet's probes come up over minutes, not in one instant.
        All at once, a fresh demo's 30 first reports (and their first sweeps) met its own
        server's admission limit, and its probes logged 429s over the URL and credential."""
        return self.intervals.inventory_s * i / max(1, len(self.hosts))

    def _run_host(self, live: LiveHost, i: int) -> None:
        if live.stop.wait(self.first_report_s(i)):
            return  # stopped before its turn came
        try:
            skew = timedelta(seconds=self.scenario.clock_skew_s(live.host.name))
            with open_runtime(self._settings(live.host), fabric=live.fabric, meter=thread_usage,
                              rng=random.Random(live.host.seed), stop=live.stop,
                              watchdog=False, wall=lambda: utcnow() + skew) as runtime:
                live.runtime = runtime
                runtime.worker.run()
        except Exception:  # one host's crash must not take the demo down
            log.exception("demo host %s stopped with an error", live.host.name)
            live.stop.set()  # stopped: nothing waits on its first report

    def _apply(self, t: float) -> None:
        fleet = [live.host for live in self.hosts]
        for live in self.hosts:
            name = live.host.name
            map_host(self.mapping_root / name, fleet, live.host, t)
            cleared, injected = apply_faults(live.fabric, self.scenario.faults_at(name, t))
            for what in _in_words(injected):
                log.info("demo +%.0f s: %s now has %s", t, name, what)
            for what in _in_words(cleared):
                log.info("demo +%.0f s: %s no longer has %s", t, name, what)
            if self.scenario.silent_at(name, t) and not live.stop.is_set():
                log.info("demo +%.0f s: %s stops reporting", t, name)
                live.stop.set()

    def _direct(self) -> None:
        while not self.stop_all.wait(DIRECTOR_TICK_S):
            try:
                self._apply(self.elapsed())
            except Exception:  # noqa: BLE001 - the director must keep directing
                log.exception("demo director failed to apply the scenario")

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop every worker (each spools what it has not delivered) and the director."""
        self.stop_all.set()
        for live in self.hosts:
            live.stop.set()
        deadline = time.monotonic() + timeout_s
        for live in self.hosts:
            if live.thread is not None:
                live.thread.join(max(0.1, deadline - time.monotonic()))
            live.fabric.close()
        if self._director.is_alive():
            self._director.join(max(0.1, deadline - time.monotonic()))


def _in_words(faults: Collection[object], most: int = 3) -> list[str]:
    """A line per fault, or, for many at once (a board slow on all 28 paths), one line per
    kind of fault with its count and an example, so the log stays readable."""
    if len(faults) <= most:
        return [str(f) for f in faults]
    kinds: dict[str, list[object]] = {}
    for f in faults:
        kinds.setdefault(type(f).__name__, []).append(f)
    return [f"{len(fs)} x {kind} (e.g. {fs[0]})" for kind, fs in sorted(kinds.items())]
