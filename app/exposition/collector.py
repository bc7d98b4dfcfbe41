"""Prometheus exposition of the fleet's judged state, read from the database at scrape time.

A custom collector in the manner of client_python's `gc_collector.py` and the Prometheus
guide "Writing exporters": nothing is kept between scrapes; each `collect()` loads one
`FleetSnapshot` and yields fresh metric families, so every replica serves the same numbers.

The server exports what it judged — per host and per GPU verdicts, staleness by its own
clock, the probes' clock skew, its alerts — and stays small at any fleet size; per-link and
per-pair series come from each host's probe agent (`peerwatch probe --metrics-port`,
`probes/agent/metrics.py`). Names are `peerwatch_<thing>_<unit>` in base units; labels `host`,
`gpu`. A verdict is one series with the verdict as a label and the value 1; when it changes
the old series ends (Prometheus marks it stale at the next scrape). How many series a host
adds, and `PEERWATCH_METRICS_DETAIL`, are in docs/alerts.md; `tests/app/exposition/`
count them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from peerwatch.app.alerting.settings import AlertingSettings, MetricsDetail
from peerwatch.app.analysis.clock import SKEW_DOC
from peerwatch.app.exposition.all_to_all import all_to_all_families
from peerwatch.app.exposition.events import event_families
from peerwatch.app.exposition.gdr import gdr_families
from peerwatch.app.exposition.holds import held_families
from peerwatch.app.exposition.nics import nic_families
from peerwatch.app.exposition.pair_faults import pair_fault_family, unjudged_family
from peerwatch.app.exposition.snapshot import FleetSnapshot, GpuVerdict, HostFacts

HOST = ["host"]
GPU = ["host", "gpu"]


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"peerwatch_{name}", doc, labels=labels)


class PeerwatchCollector(Collector):
    """Yields the fleet's judged state from a snapshot loaded at each scrape.

    `load(gpus)` reads the database (see `app/exposition/loader.py`); it is a callable so that
    this class never holds a session between scrapes.
    """

    def __init__(self, load: Callable[[bool], FleetSnapshot],
                 settings: AlertingSettings) -> None:
        self._load = load
        self._gpus = settings.metrics_detail is not MetricsDetail.HOST

    def collect(self) -> Iterable[Metric]:
        snap = self._load(self._gpus)
        families: list[Metric] = [*host_families(snap.hosts), alert_family(snap),
                                  *peer_gap_families(snap), *held_families(snap.held),
                                  pair_fault_family(snap.pair_faults),
                                  unjudged_family(snap.unjudged), *nic_families(snap.hosts)]
        if snap.events is not None:
            families += event_families(snap.events)
        if self._gpus:
            families += [*gpu_families(snap.gpus), *all_to_all_families(snap.all_to_all),
                         *gdr_families(snap.gdr)]
        return families


def _timestamp(at: datetime | None) -> float | None:
    return at.timestamp() if at is not None else None


def host_families(hosts: list[HostFacts]) -> Iterator[Metric]:
    info = _gauge("host_info", "Host identity from its newest report (always 1).",
                  [*HOST, "fabric", "driver_version", "cuda_version", "probe_version"])
    verdict = _gauge("host_verdict", "The host's stored verdict (healthy, degraded, down, "
                     "unknown) as the label of a series whose value is 1.", [*HOST, "verdict"])
    yield info
    yield verdict
    for h in hosts:
        info.add_metric([h.host, h.fabric, h.driver_version or "", h.cuda_version or "",
                         h.probe_version or ""], 1)
        if h.verdict is not None:
            verdict.add_metric([h.host, h.verdict], 1)
    values: list[tuple[str, str, Callable[[HostFacts], float | None]]] = [
        ("host_verdict_since_timestamp_seconds", "When the host entered its current verdict.",
         lambda h: _timestamp(h.verdict_since)),
        ("host_stale", "1 when the host's probe has been silent too long (the server's "
         "clock), else 0.", lambda h: None if h.stale is None else float(h.stale)),
        ("host_gpus", "GPUs the host should have (its inventory and those seen before).",
         lambda h: h.gpus_total),
        ("host_gpus_healthy", "GPUs whose verdict is healthy.", lambda h: h.gpus_healthy),
        ("host_p2p_bandwidth_ratio_min", "Lowest judged measured/expected bandwidth among "
         "the host's pairs and tests.", lambda h: h.worst_ratio),
        ("probe_last_received_timestamp_seconds", "When the server last heard from the "
         "host's probe: its newest report or heartbeat, or a report refused while busy, by "
         "the server's clock (judge staleness by this).",
         lambda h: _timestamp(h.last_heard_at or h.last_received_at)),
        ("host_last_sweep_timestamp_seconds", "When the host's newest stored sweep finished, "
         "by the probe's clock.", lambda h: _timestamp(h.last_sweep_at)),
        ("host_refused_reports", "Reports of the host the server refused (429/503: busy) "
         "since it last stored one; the probe was heard from (only while it has some).",
         lambda h: h.refused_reports or None),
        ("probe_last_refused_timestamp_seconds", "When the server last refused one of the "
         "host's reports because it was busy (server clock).",
         lambda h: _timestamp(h.last_refused_at)),
        ("probe_clock_skew_seconds", SKEW_DOC, lambda h: h.clock_skew_s),
    ]
    for name, doc, read in values:
        family = _gauge(name, doc, HOST)
        for h in hosts:
            value = read(h)
            if value is not None:
                family.add_metric([h.host], value)
        yield family
    fabric = _gauge("host_fabric_problem", "1 for each kind of host-level fabric "
                    "contradiction in the host's stored verdict (fabric_manager).",
                    [*HOST, "kind"])
    for h in hosts:
        for kind in h.fabric_problems:
            fabric.add_metric([h.host, kind], 1)
    yield fabric


def gpu_families(gpus: list[GpuVerdict]) -> Iterator[Metric]:
    verdict = _gauge("gpu_verdict", "The GPU's stored verdict as the label of a series whose "
                     "value is 1.", [*GPU, "verdict"])
    present = _gauge("gpu_present", "1 when the GPU is in the host's newest inventory, 0 when "
                     "a GPU seen before, or on the PCI bus, is missing from it (fell off the "
                     "bus).", GPU)
    fabric = _gauge("gpu_fabric_problem", "1 for each kind of fabric contradiction in the "
                    "GPU's stored verdict (registration, status, health, links, peer_copies).",
                    [*GPU, "kind"])
    throttle = _gauge("gpu_throttle", "1 for each kind (power, thermal, hw) the GPU's clocks "
                      "were held for, when held in most of its newest sweeps (its stored "
                      "verdict; app/analysis/throttle.py).", [*GPU, "kind"])
    driver = _gauge("gpu_driver_problem", "1 for each finding of the GPU's driver in its "
                    "stored verdict: kind recovery_action, row_remap_failure, "
                    "ecc_uncorrected, row_remap_pending or aer, with the verdict it gave "
                    "(app/analysis/gpu_health.py).", [*GPU, "kind", "verdict"])
    for g in gpus:
        verdict.add_metric([g.host, str(g.gpu), g.verdict], 1)
        for kind, given in g.driver:
            driver.add_metric([g.host, str(g.gpu), kind, given], 1)
        if g.present is not None:
            present.add_metric([g.host, str(g.gpu)], 1 if g.present else 0)
        for kind in g.fabric:
            fabric.add_metric([g.host, str(g.gpu), kind], 1)
        for kind in g.throttle:
            throttle.add_metric([g.host, str(g.gpu), kind], 1)
    yield from (verdict, present, fabric, throttle, driver)


def alert_family(snap: FleetSnapshot) -> Metric:
    family = _gauge("alerts", "Pending and firing alerts of the server's own rules.",
                    ["alertname", "state", "severity", "host"])
    for a in snap.alerts:
        family.add_metric([a.alertname, a.state, a.severity, a.host], a.count)
    return family


def peer_gap_families(snap: FleetSnapshot) -> list[Metric]:
    """Only the pairs, GPUs and hosts the server flagged below their fleet peers: a handful
    of series."""
    pairs = _gauge("pair_fleet_peer_ratio", "A pair's figure over its peer group's median "
                   "(same GPU model, topology, driver), for pairs the server judged below "
                   "PEERWATCH_FLEET_PEER_FLOOR of it.", ["host", "gpu", "peer_gpu", "test"])
    gpus = _gauge("gpu_fleet_peer_ratio", "A GPU's own copy (h2d, d2h, local) over its peer "
                  "group's median (same GPU model, PCIe link, driver), for GPUs the server "
                  "judged below PEERWATCH_FLEET_PEER_FLOOR of it.", ["host", "gpu", "test"])
    hosts = _gauge("host_fleet_peer_ratio", "A host's median ratio to its fleet peers over "
                   "its pair tests, for hosts below PEERWATCH_FLEET_PEER_FLOOR (the whole "
                   "host slow).", ["host"])
    for g in snap.peer_gaps:
        if g.gpu == g.peer_gpu:
            gpus.add_metric([g.host, str(g.gpu), g.test], g.ratio)
        else:
            pairs.add_metric([g.host, str(g.gpu), str(g.peer_gpu), g.test], g.ratio)
    for h in snap.host_peer_gaps:
        hosts.add_metric([h.host], h.ratio)
    return [pairs, gpus, hosts]
