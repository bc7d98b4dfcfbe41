"""`peerwatch demo` in a subprocess, plus hosts of our own whose state the tests know.

The demo is what a person runs: the real server on SQLite and simulated hosts of each preset
(hgx8-01, h200x2-01, mesh4-01, pcie4-01) reporting through the real probe worker. Its live
faults take minutes to develop, so next to it we store (see `seed.py`):
- `hgx8-faulty`: an HGX board whose GPU3 lost two NVLinks, whose GPU1 <-> GPU2 path has
  run at half speed and whose GPU5 link 2 has counted replays, for the last 30 minutes;
- two hosts whose names are HTML (`<script>...`, `<img onerror=...>`): ingest refuses such
  names now (the host-name rule), but a database from before it may hold them;
- `pcie4-gone`: a healthy PCIe box whose last report was 10 minutes ago (stale);
- `hgx8-lost`: an HGX board whose GPU6 fell off the bus (GPUMissing, critical) after its
  GPU1 -> GPU2 path had slowed to half (P2PBandwidthDegraded, warning): its top fault is GPU6;
- `h200x2-slow`: an H200 pair 9 % slow and GPU1's host copies 10 % slow for its whole hour
  of history (its baselines are slow too), judged against its fleet peers, the other H200
  pairs and GPUs (docs/fleet-peers.md).
On a simulated leaf/spine network (`NET_HOSTS`, probes/sim/simnet.py) the demo's four hosts
sit under one leaf, five of ours under another; `mesh4-01`'s cable is bad (slow with every
partner: a host fault), the path between `hgx8-lost` and `h200x2-slow` is slow (a path
fault, tested last: their other pairs are older, so both are suspects), `pcie4-gone` (stale)
was healthy with `hgx8-faulty`, and `h200x2-maint` and `clock-behind-01` are on the map but
never tested.
A keeper thread sends each of them but the stale one an inventory pass every few seconds, as
their probe would, so none turns stale (the demo calls a host stale after 60 s) while the
tests run.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from peerwatch.probes.report import GPU_TESTS
from peerwatch.probes.sim.faults import (
    BandwidthFactor,
    ErrorGrowth,
    GpuLost,
    HostCopySlow,
    LinksDown,
)
from peerwatch.probes.sim.simnet import BadCable, PairPathSlow, SimNetwork
from peerwatch.probes.sim.simnet import SimHost as NetHost
from tests.browser.seed import QUICK_TESTS, Episode, SimHost, Store

DEMO_HOSTS = 4
KEEP_ALIVE_S = 10.0
CLOCK_BEHIND_S = 180.0  # SKEWED: 3 min, as the demo's mesh4-02
START_TIMEOUT_S = 300.0  # generous: the demo starts slowly on a loaded machine
FAULTY = "hgx8-faulty"
ADMIN_TOKEN = "browser-test-admin-token"  # the demo's --admin-token: ack and silence
STALE = "pcie4-gone"
MAINTAINED = "h200x2-maint"  # in a declared maintenance window
SLOW = "h200x2-slow"  # slow from the start: flagged against its fleet peers
SKEWED = "clock-behind-01"  # a PCIe host whose probe clock runs 3 min behind, from the start
LOST = "hgx8-lost"  # GPU6 fell off the bus 20 min ago; GPU1 -> GPU2 has run at half speed since
BAD_CABLE = "mesh4-01"  # its NIC's cable is bad: slow with every partner
NET_HOSTS = {"leaf-a": ("hgx8-01", "h200x2-01", "mesh4-01", "pcie4-01"),
             "leaf-b": (FAULTY, LOST, SLOW, MAINTAINED, SKEWED, STALE)}
NET_PAIRS = (("hgx8-01", "h200x2-01"), ("h200x2-01", "mesh4-01"), ("mesh4-01", "pcie4-01"),
             ("pcie4-01", "hgx8-01"), (FAULTY, LOST), (FAULTY, SLOW), ("hgx8-01", FAULTY),
             ("pcie4-01", SLOW), ("mesh4-01", LOST), ("h200x2-01", LOST), (STALE, FAULTY),
             (LOST, SLOW))
XSS_SCRIPT = "<script>window.__pwned=1</script>"
XSS_IMG = "<img src=x onerror=window.__pwned=1>"


@dataclass
class Fleet:
    url: str
    faulty: str = FAULTY
    stale: str = STALE
    xss: tuple[str, ...] = (XSS_SCRIPT, XSS_IMG)
    own: list[SimHost] = field(default_factory=list)

    def api(self, path: str, **params: object) -> dict:
        response = httpx.get(f"{self.url}/api/v1{path}", params=params, timeout=30)
        response.raise_for_status()
        return response.json()


class DemoProcess:
    def __init__(self, data_dir: Path, port: int) -> None:
        self.data_dir = data_dir
        self.url = f"http://127.0.0.1:{port}"
        self.log = data_dir / "demo.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "peerwatch.app.cli", "demo", "--port", str(port),
                 "--data-dir", str(data_dir), "--hosts", str(DEMO_HOSTS),
                 "--backfill-hours", "0", "--admin-token", ADMIN_TOKEN],
                stdout=out, stderr=subprocess.STDOUT)

    def lost_its_port(self) -> bool:
        """The demo exited because another process took its port between our pick and its bind."""
        return (self.proc.poll() is not None
                and "address already in use" in self.log.read_text(errors="replace").lower())

    def wait_reporting(self) -> None:
        """Until the server answers and every demo host has sent its first report."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"peerwatch demo exited {self.proc.returncode}:\n"
                                   + self.log.read_text(errors="replace"))
            try:
                hosts = httpx.get(f"{self.url}/api/v1/hosts", timeout=5).json()["hosts"]
                if len(hosts) >= DEMO_HOSTS:
                    return
            except (httpx.HTTPError, KeyError, ValueError):
                pass
            time.sleep(0.3)
        raise RuntimeError("peerwatch demo did not start:\n" + self.log.read_text(errors="replace"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # the demo's Ctrl-C: stops fleet and server
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def own_hosts(store: Store) -> list[SimHost]:
    faulty = SimHost("hgx8", FAULTY, seed=3)
    reports = faulty.history(every_s=900, episodes=[
        Episode(1800, (LinksDown(gpu=3, count=2), BandwidthFactor(src=1, dst=2, factor=0.5),
                       ErrorGrowth(gpu=5, link=2, counter="replay", per_second=0.05),
                       HostCopySlow(gpu=6, factor=0.4)))], tests=(*QUICK_TESTS, *GPU_TESTS))
    lost = SimHost("hgx8", LOST, seed=5, span_s=1800)
    reports += lost.history(every_s=600, episodes=[
        Episode(600, (BandwidthFactor(src=1, dst=2, factor=0.5),)),
        Episode(1200, (GpuLost(gpu=6),))])
    hosts = [faulty, lost]
    for i, name in enumerate((XSS_SCRIPT, XSS_IMG)):
        host = SimHost("h200x2", name, seed=20 + i, span_s=0)
        reports += host.history()
        hosts.append(host)
    host = SimHost("h200x2", MAINTAINED, seed=30, span_s=0)
    reports += host.history(tests=(*QUICK_TESTS, *GPU_TESTS))  # a GPU peer of h200x2-slow
    hosts.append(host)
    slow = SimHost("h200x2", SLOW, seed=40)
    slow.fabric.inject(BandwidthFactor(src=0, dst=1, factor=0.91), HostCopySlow(gpu=1, factor=0.9))
    reports += slow.history(tests=(*QUICK_TESTS, *GPU_TESTS))
    hosts.append(slow)
    store.put(reports)
    store.peer_round([SLOW])
    store.maintenance(MAINTAINED, hours=2, comment="NVSwitch tray swap")
    skewed = SimHost("pcie4", SKEWED, seed=50, span_s=0, ago_s=CLOCK_BEHIND_S,
                     clock_behind_s=CLOCK_BEHIND_S)
    store.put(skewed.history(), sent_when_finished=True)
    hosts.append(skewed)
    store.network(browser_network(), NET_PAIRS)
    gone = SimHost("pcie4", STALE, seed=30, span_s=1800, ago_s=600).history(every_s=600)
    store.put(gone, received_when_sent=True)
    return hosts


def browser_network() -> SimNetwork:
    """`NET_HOSTS` on two leaves under two spine groups; a bad cable and a slow path."""
    net = SimNetwork({h: NetHost(h, leaf, f"spine-{leaf[-1]}")
                      for leaf, names in NET_HOSTS.items() for h in names})
    net.faults = [BadCable(BAD_CABLE), PairPathSlow(LOST, SLOW)]
    return net


class Keeper(threading.Thread):
    """Sends our hosts an inventory pass every KEEP_ALIVE_S, like their probes would."""

    def __init__(self, store: Store, hosts: list[SimHost]) -> None:
        super().__init__(name="browser-test-keeper", daemon=True)
        self.store, self.hosts = store, hosts
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(KEEP_ALIVE_S):
            self.store.put(h.inventory_now() for h in self.hosts if not h.clock_behind_s)
            self.store.put((h.inventory_now() for h in self.hosts if h.clock_behind_s),
                           sent_when_finished=True)

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=30)
