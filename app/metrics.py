"""Prometheus exposition of peerwatch's current state, read from the database at scrape time.

A custom collector in the manner of client_python's `gc_collector.py` and the Prometheus
guide "Writing exporters": nothing is kept between scrapes; each `collect()` loads one
`FleetSnapshot` and yields fresh metric families, so every replica serves the same numbers.

Names are `peerwatch_<thing>_<unit>` in base units; lifetime counters end in `_total`
(Prometheus rules judge them with `increase()`/`rate()`, never their value). Labels: `host`,
`gpu`, `peer_gpu` (data flows gpu -> peer_gpu), `link`, `test`. How many series a host adds
and how to cut them (`PEERWATCH_METRICS_DETAIL`, `PEERWATCH_METRICS_TESTS`) is in
docs/alerts.md; `tests/app/test_metrics.py` counts them for an 8-GPU HGX board.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from app.alerting.settings import AlertingSettings, MetricsDetail
from app.metrics_snapshot import FleetSnapshot, GpuFacts, PortFacts, ResultFacts
from probes.report import TestName

# Lifetime NVLink counters: LinkCounters field -> metric name stem.
ERROR_COUNTERS: dict[str, str] = {
    "replay": "replay_errors",
    "recovery": "recovery_errors",
    "crc_flit": "crc_flit_errors",
    "crc_data": "crc_data_errors",
    "ecc_data": "ecc_data_errors",
}
TRAFFIC_COUNTERS: dict[str, str] = {"tx_bytes": "transmit_bytes", "rx_bytes": "receive_bytes"}

HOST = ["host"]
GPU = ["host", "gpu"]
LINK = ["host", "gpu", "link"]
PAIR = ["host", "gpu", "peer_gpu"]
PAIR_TEST = ["host", "gpu", "peer_gpu", "test"]


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"peerwatch_{name}", doc, labels=labels)


def _counter(name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
    """`name` without `_total`: the exposition adds it."""
    return CounterMetricFamily(f"peerwatch_{name}", doc, labels=labels)


class PeerwatchCollector(Collector):
    """Yields peerwatch's metrics from a snapshot loaded at each scrape.

    `load` reads the database (see `app/metrics_loader.py`); it is a callable so that this
    class never holds a session between scrapes.
    """

    def __init__(self, load: Callable[[], FleetSnapshot], settings: AlertingSettings) -> None:
        self._load = load
        self._detail = settings.metrics_detail
        self._tests = frozenset(settings.metrics_tests)

    def collect(self) -> Iterable[Metric]:
        snap = self._load()
        families: list[Metric] = [*host_families(snap), alert_family(snap)]
        if self._detail in (MetricsDetail.GPU, MetricsDetail.PAIR):
            families += gpu_families(snap.gpus)
        if self._detail is MetricsDetail.PAIR:
            families += port_families(snap.ports)
            families += pair_families(snap, self._tests)
        return families


# --------------------------------------------------------------------------- per host


def host_families(snap: FleetSnapshot) -> Iterator[Metric]:
    yield from probe_families(snap)
    yield from host_aggregate_families(snap)


def probe_families(snap: FleetSnapshot) -> Iterator[Metric]:
    info = _gauge("host_info", "Host identity from its latest report (always 1).",
                  [*HOST, "fabric", "driver_version", "cuda_version", "probe_version"])
    last_report = _gauge("probe_last_report_timestamp_seconds",
                         "When the host's latest report (of any kind) finished.", HOST)
    last_sweep = _gauge("probe_last_sweep_timestamp_seconds",
                        "When the host's latest sweep (transfer tests) finished.", HOST)
    gpu_time = _gauge("probe_sweep_gpu_seconds", "GPU time the latest sweep used.", HOST)
    wall = _gauge("probe_sweep_duration_seconds", "Wall time of the latest sweep.", HOST)
    memory = _gauge("probe_sweep_device_memory_bytes",
                    "Peak device memory the latest sweep held on any one GPU.", HOST)
    skipped = _gauge("probe_skipped_gpus", "GPUs the latest sweep skipped (busy, failed).", HOST)
    failed = _gauge("probe_transfer_errors", "Transfer tests that failed in the latest sweep.",
                    HOST)
    errors = _gauge("probe_errors", "Probe errors (unreadable items) in the latest report.", HOST)
    for h in snap.hosts:
        labels = [h.host]
        info.add_metric([h.host, h.fabric, h.driver_version or "", h.cuda_version or "",
                         h.probe_version or ""], 1)
        if h.last_report_at is not None:
            last_report.add_metric(labels, h.last_report_at.timestamp())
        if h.last_sweep_at is not None:
            last_sweep.add_metric(labels, h.last_sweep_at.timestamp())
            skipped.add_metric(labels, h.skipped_gpus)
            failed.add_metric(labels, h.transfer_errors)
        for family, value in ((gpu_time, h.sweep_gpu_time_s), (wall, h.sweep_wall_time_s),
                              (memory, h.sweep_device_memory_bytes)):
            if value is not None:
                family.add_metric(labels, value)
        errors.add_metric(labels, h.probe_errors)
    yield from (info, last_report, last_sweep, gpu_time, wall, memory, skipped, failed, errors)


def host_aggregate_families(snap: FleetSnapshot) -> Iterator[Metric]:
    """A few series per host that stay cheap at any fleet size (all `metrics_detail` levels)."""
    gpus = _gauge("host_gpus", "GPUs in the host's inventory.", HOST)
    links = _gauge("host_nvlinks", "NVLink ports of all the host's GPUs.", HOST)
    down = _gauge("host_nvlinks_down", "NVLink ports that are down.", HOST)
    no_p2p = _gauge("host_p2p_pairs_without_access", "Ordered GPU pairs without P2P access.",
                    HOST)
    downtrained = _gauge("host_pcie_links_downtrained",
                         "GPUs whose PCIe link runs below its max generation or width.", HOST)
    for host in sorted({h.host for h in snap.hosts}):
        gpus.add_metric([host], sum(1 for g in snap.gpus if g.host == host))
        links.add_metric([host], sum(1 for p in snap.ports if p.host == host))
        down.add_metric([host], sum(1 for p in snap.ports if p.host == host and not p.up))
        no_p2p.add_metric([host], sum(1 for p in snap.pairs
                                      if p.host == host and p.p2p_access is False))
        downtrained.add_metric([host], sum(1 for g in snap.gpus
                                           if g.host == host and pcie_downtrained(g)))
    yield from (gpus, links, down, no_p2p, downtrained)
    yield from host_counter_families(snap.ports)
    yield worst_ratio_family(snap.results)


def host_counter_families(ports: list[PortFacts]) -> Iterator[Metric]:
    stems = {**ERROR_COUNTERS, **TRAFFIC_COUNTERS}
    sums: dict[str, dict[str, int]] = {f: defaultdict(int) for f in stems}
    for p in ports:
        for field_name in stems:
            value = getattr(p.counters, field_name, None) if p.counters else None
            if value is not None:
                sums[field_name][p.host] += value
    for field_name, stem in stems.items():
        family = _counter(f"host_nvlink_{stem}", f"Sum over the host's NVLink ports of "
                          f"{_counter_doc(field_name)}", HOST)
        for host, total in sorted(sums[field_name].items()):
            family.add_metric([host], total)
        yield family


def worst_ratio_family(results: list[ResultFacts]) -> Metric:
    family = _gauge("host_p2p_bandwidth_ratio_min",
                    "Lowest measured/expected bandwidth among the host's uncontended pairs.",
                    ["host", "test"])
    worst: dict[tuple[str, str], float] = {}
    for r in results:
        ratio = bandwidth_ratio(r)
        if ratio is None or r.contended:
            continue
        key = (r.host, r.test.value)
        worst[key] = min(ratio, worst.get(key, ratio))
    for (host, test), ratio in sorted(worst.items()):
        family.add_metric([host, test], ratio)
    return family


def alert_family(snap: FleetSnapshot) -> Metric:
    family = _gauge("alerts", "Pending and firing alerts of the server's own rules.",
                    ["alertname", "state", "severity", "host"])
    for a in snap.alerts:
        family.add_metric([a.alertname, a.state, a.severity, a.host], a.count)
    return family


# --------------------------------------------------------------------------- per GPU


def gpu_families(gpus: list[GpuFacts]) -> Iterator[Metric]:
    ports = _gauge("gpu_nvlink_links",
                   "NVLink ports the GPU has had (reported now or seen before).", GPU)
    active = _gauge("gpu_nvlink_active_links", "NVLink ports that are up.", GPU)
    pcie = {
        "gen_current": _gauge("pcie_link_generation", "PCIe generation the link runs at.", GPU),
        "gen_max": _gauge("pcie_link_max_generation", "Highest PCIe generation possible.", GPU),
        "width_current": _gauge("pcie_link_width_lanes", "PCIe lanes the link runs with.", GPU),
        "width_max": _gauge("pcie_link_max_width_lanes", "Most PCIe lanes possible.", GPU),
    }
    replay = _counter("pcie_replay_errors", "PCIe replays of the GPU's link (lifetime).", GPU)
    for g in gpus:
        labels = [g.host, str(g.gpu)]
        ports.add_metric(labels, g.nvlink_ports)
        active.add_metric(labels, g.nvlinks_active)
        for field_name, family in pcie.items():
            value = getattr(g.pcie, field_name)
            if value is not None:
                family.add_metric(labels, value)
        if g.pcie.replay_count is not None:
            replay.add_metric(labels, g.pcie.replay_count)
    yield from (ports, active, *pcie.values(), replay)


def pcie_downtrained(g: GpuFacts) -> bool:
    """Current PCIe width or generation below its maximum (unknown values never count)."""
    return _below(g.pcie.width_current, g.pcie.width_max) or _below(
        g.pcie.gen_current, g.pcie.gen_max)


def _below(current: int | None, maximum: int | None) -> bool:
    return current is not None and maximum is not None and current < maximum


# --------------------------------------------------------------------------- per link


def port_families(ports: list[PortFacts]) -> Iterator[Metric]:
    up = _gauge("nvlink_up", "1 when NVML reports the NVLink port active, else 0.", LINK)
    counters = {f: _counter(f"nvlink_{stem}", _counter_doc(f), LINK)
                for f, stem in {**ERROR_COUNTERS, **TRAFFIC_COUNTERS}.items()}
    for p in ports:
        labels = [p.host, str(p.gpu), str(p.link)]
        up.add_metric(labels, 1 if p.up else 0)
        for field_name, family in counters.items():
            value = getattr(p.counters, field_name, None) if p.counters else None
            if value is not None:
                family.add_metric(labels, value)
    yield up
    yield from counters.values()


def _counter_doc(field_name: str) -> str:
    if field_name in TRAFFIC_COUNTERS:
        way = "transmitted" if field_name == "tx_bytes" else "received"
        return f"NVLink data bytes {way} (lifetime; judge the rate)."
    return f"NVLink {field_name.replace('_', ' ')} errors (lifetime; judge the increase)."


# --------------------------------------------------------------------------- per pair


def pair_families(snap: FleetSnapshot, tests: frozenset[TestName]) -> Iterator[Metric]:
    width = _gauge("p2p_nvlink_links",
                   "NVLinks joining the pair (NVSwitch: the smaller active count of the two).",
                   PAIR)
    access = _gauge("p2p_access", "1 when P2P reads and writes are possible, else 0.", PAIR)
    for p in snap.pairs:
        labels = [p.host, str(p.src), str(p.dst)]
        width.add_metric(labels, p.nvlink_width)
        if p.p2p_access is not None:
            access.add_metric(labels, 1 if p.p2p_access else 0)
    yield from (width, access)
    yield from result_families([r for r in snap.results if r.test in tests])


def result_families(results: list[ResultFacts]) -> Iterator[Metric]:
    bw = {
        "value": _gauge("p2p_bandwidth_bytes_per_second",
                        "Latest measured bandwidth (ce_bidir: both directions summed).",
                        PAIR_TEST),
        "expected": _gauge("p2p_expected_bandwidth_bytes_per_second",
                           "Bandwidth the pair's topology should give.", PAIR_TEST),
        "baseline": _gauge("p2p_baseline_bandwidth_bytes_per_second",
                           "The pair's own recent uncontended norm.", PAIR_TEST),
    }
    ratio = _gauge("p2p_bandwidth_ratio", "Latest measured / expected bandwidth.", PAIR_TEST)
    lat = {
        "value": _gauge("p2p_latency_seconds", "Latest peer latency (pointer chase).", PAIR),
        "expected": _gauge("p2p_expected_latency_seconds", "Latency the path should give.", PAIR),
        "baseline": _gauge("p2p_baseline_latency_seconds", "The pair's own latency norm.", PAIR),
    }
    contended = _gauge("p2p_contended",
                       "1 when other traffic shared the links during the latest test.", PAIR_TEST)
    for r in results:
        pair = [r.host, str(r.src), str(r.dst)]
        contended.add_metric([*pair, r.test.value], 1 if r.contended else 0)
        if r.test is TestName.LATENCY:
            _add_values(lat, pair, r)
            continue
        _add_values(bw, [*pair, r.test.value], r)
        value = bandwidth_ratio(r)
        if value is not None:
            ratio.add_metric([*pair, r.test.value], value)
    yield from (*bw.values(), ratio, *lat.values(), contended)


def _add_values(families: dict[str, GaugeMetricFamily], labels: list[str],
                r: ResultFacts) -> None:
    for attr, family in families.items():
        value = getattr(r, attr)
        if value is not None:
            family.add_metric(labels, value)


def bandwidth_ratio(r: ResultFacts) -> float | None:
    if r.test is TestName.LATENCY or not r.expected:
        return None
    return r.value / r.expected
