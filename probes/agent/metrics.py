"""The agent's own `/metrics`: this host's per-link, per-GPU and per-pair series.

The dcgm-exporter pattern: every GPU node serves its own series and Prometheus scrapes each
node, so the per-link and per-pair cardinality is spread over the fleet's scrape targets
instead of piling up in the server's `/metrics` (which exports verdicts only; see
docs/alerts.md). A custom collector in the manner of client_python's `gc_collector.py`
reads the agent's newest state (`probes/agent/agent_state.py`) at scrape time; nothing here
judges a value, it exports what the probe read and measured.

Names are `peerwatch_<thing>_<unit>` in base units; lifetime counters end in `_total`.
Labels: `host`, `gpu`, `peer_gpu` (data flows gpu -> peer_gpu), `link`, `test`. Only
prometheus_client is imported: the probe never loads the server's FastAPI or SQLAlchemy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from peerwatch.probes.agent.agent_state import (
    AgentState,
    AgentView,
    newest_counters,
    newest_pcie_replays,
)
from peerwatch.probes.agent.metrics_clocks import clock_families
from peerwatch.probes.report import P2PCap, P2PStatus, PairInfo, Report, TestName, declared_tests

# Lifetime NVLink counters: LinkCounters field -> metric name stem (without `_total`).
LINK_COUNTERS: dict[str, str] = {
    "replay": "replay_errors",
    "recovery": "recovery_errors",
    "crc_flit": "crc_flit_errors",
    "crc_data": "crc_data_errors",
    "ecc_data": "ecc_data_errors",
    "tx_bytes": "transmit_bytes",
    "rx_bytes": "receive_bytes",
}
PCIE_GAUGES: dict[str, tuple[str, str]] = {
    "gen_current": ("pcie_link_generation", "PCIe generation the link runs at."),
    "gen_max": ("pcie_link_max_generation", "Highest PCIe generation possible."),
    "width_current": ("pcie_link_width_lanes", "PCIe lanes the link runs with."),
    "width_max": ("pcie_link_max_width_lanes", "Most PCIe lanes possible."),
}

log = logging.getLogger(__name__)

HOST = ["host"]
GPU = ["host", "gpu"]
LINK = ["host", "gpu", "link"]
PAIR = ["host", "gpu", "peer_gpu"]
PAIR_TEST = ["host", "gpu", "peer_gpu", "test"]


class SpoolGauge(Protocol):
    """What the collector reads of the spool (`probes.agent.spool.Spool` is one)."""

    def __len__(self) -> int: ...
    def size_bytes(self) -> int: ...
    def dropped(self) -> int: ...


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"peerwatch_{name}", doc, labels=labels)


def _counter(name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
    """`name` without `_total`: the exposition adds it."""
    return CounterMetricFamily(f"peerwatch_{name}", doc, labels=labels)


class AgentCollector(Collector):
    """Yields this host's series from the agent's newest state, read at each scrape."""

    def __init__(self, state: AgentState, spool: SpoolGauge | None = None,
                 tests: Iterable[TestName] | None = None) -> None:
        self._state = state
        self._spool = spool
        self._tests = frozenset(t.value for t in (tests or declared_tests()))

    def collect(self) -> Iterable[Metric]:
        """Every group that can be built; one that raises is logged and left out, so a bad
        reading (or a spool being rewritten) never costs the scrape its other series."""
        view = self._state.view()
        return [*self.spool_families(view), *self.host_families(view)]

    def spool_families(self, view: AgentView) -> list[Metric]:
        """What changes between passes: the spool's depth and the drop count."""
        return _safely("spool", lambda: list(spool_families(self._spool, view)))

    def host_families(self, view: AgentView) -> list[Metric]:
        """What changes only when a pass is recorded: the host's own series."""
        if view.latest is None:
            return []  # nothing measured yet
        latest = view.latest
        host = latest.host.hostname
        groups: list[tuple[str, Callable[[], list[Metric]]]] = [
            ("probe", lambda: list(probe_families(host, view))),
            ("gpu", lambda: list(gpu_families(host, view))),
            ("clocks", lambda: list(clock_families(host, latest))),
            ("job", lambda: [gpu_job_info(host, latest)]),
            ("link", lambda: list(link_families(host, latest))),
            ("pair", lambda: list(pair_families(host, latest.inventory.pairs))),
            ("result", lambda: list(result_families(host, view, self._tests))),
        ]
        families: list[Metric] = []
        for name, build in groups:
            families += _safely(name, build)
        return families


def _safely(name: str, build: Callable[[], list[Metric]]) -> list[Metric]:
    try:
        return build()
    except Exception:  # noqa: BLE001 - the other groups must still be served
        log.exception("agent metrics: the %s series could not be built; left out", name)
        return []


# --------------------------------------------------------------------------- the agent


def probe_families(host: str, view: AgentView) -> Iterator[Metric]:
    latest = view.latest
    assert latest is not None
    info = _gauge("probe_info", "This probe's host identity (always 1).",
                  [*HOST, "fabric", "driver_version", "cuda_version", "probe_version"])
    h = latest.host
    info.add_metric([host, h.fabric, h.driver_version or "", h.cuda_version or "",
                     h.probe_version or ""], 1)
    last = _gauge("probe_last_report_timestamp_seconds",
                  "When the newest pass (inventory or sweep) finished, by this host's clock.",
                  HOST)
    last.add_metric([host], latest.finished_at.timestamp())
    errors = _gauge("probe_errors", "Items the newest pass could not read.", HOST)
    errors.add_metric([host], len(latest.errors))
    yield from (info, last, errors)
    if view.sweep is not None:
        yield from sweep_families(host, view.sweep)


def sweep_families(host: str, sweep: Report) -> Iterator[Metric]:
    cost = sweep.cost
    values = [
        ("probe_last_sweep_timestamp_seconds", "When the newest sweep finished.",
         sweep.finished_at.timestamp()),
        ("probe_sweep_gpu_seconds", "GPU time the newest sweep used.", cost.gpu_time_s),
        ("probe_sweep_duration_seconds", "Wall time of the newest sweep.", cost.wall_time_s),
        ("probe_sweep_device_memory_bytes",
         "Peak device memory the newest sweep held on any one GPU.", cost.device_memory_bytes_max),
        ("probe_skipped_gpus", "GPUs the newest sweep skipped (busy, failed).", len(cost.skipped)),
        ("probe_transfer_errors", "Transfer tests that failed in the newest sweep.",
         sum(1 for r in sweep.results if r.error)),
    ]
    for name, doc, value in values:
        family = _gauge(name, doc, HOST)
        family.add_metric([host], value)
        yield family


def spool_families(spool: SpoolGauge | None, view: AgentView) -> Iterator[Metric]:
    if spool is None:
        return
    depth = _gauge("probe_spool_reports", "Undelivered reports waiting in the spool.", [])
    depth.add_metric([], len(spool))
    size = _gauge("probe_spool_bytes", "Bytes the spooled reports take on disk.", [])
    size.add_metric([], spool.size_bytes())
    dropped = _counter("probe_dropped_reports",
                       "Reports lost (spool full, corrupt, rejected): announced to the server "
                       "since the agent started, plus those not yet announced.", [])
    dropped.add_metric([], view.dropped_reports + spool.dropped())
    yield from (depth, size, dropped)


# --------------------------------------------------------------------------- per GPU


def gpu_families(host: str, view: AgentView) -> Iterator[Metric]:
    latest = view.latest
    assert latest is not None
    had = _gauge("gpu_nvlink_links",
                 "NVLink ports the GPU has had (reported now or since the agent started).", GPU)
    active = _gauge("gpu_nvlink_active_links", "NVLink ports that are up.", GPU)
    pcie = {f: _gauge(name, doc, GPU) for f, (name, doc) in PCIE_GAUGES.items()}
    replay = _counter("pcie_replay_errors", "PCIe replays of the GPU's link (lifetime).", GPU)
    replays = newest_pcie_replays(latest.counters)
    up: dict[int, int] = {}
    for p in latest.inventory.nvlinks:
        up[p.gpu] = up.get(p.gpu, 0) + (p.state.value == "up")
    for g in latest.inventory.gpus:
        labels = [host, str(g.index)]
        had.add_metric(labels, len(view.ports_had.get(g.index, ())))
        active.add_metric(labels, up.get(g.index, 0))
        for field_name, family in pcie.items():
            value = getattr(g.pcie, field_name)
            if value is not None:
                family.add_metric(labels, value)
        count = replays.get(g.index, g.pcie.replay_count)
        if count is not None:
            replay.add_metric(labels, count)
    yield from (had, active, *pcie.values(), replay)


def gpu_job_info(host: str, report: Report) -> Metric:
    """One series per (GPU, job) holding it, value 1: join on `host, gpu` to see which job a
    series belonged to (`* on(host, gpu) group_left(job) peerwatch_gpu_job_info`), so the
    job never becomes a label of every series. No mapping, no series."""
    info = _gauge("gpu_job_info", "A job holding the GPU at the newest pass (always 1; "
                  "source: mapping_dir or kubernetes).", [*GPU, "job", "source"])
    for j in report.jobs:
        info.add_metric([host, str(j.gpu), j.job, j.source.value], 1)
    return info


# --------------------------------------------------------------------------- per link


def link_families(host: str, report: Report) -> Iterator[Metric]:
    up = _gauge("nvlink_up", "1 when NVML reports the NVLink port active, else 0.", LINK)
    counters = {f: _counter(f"nvlink_{stem}", _counter_doc(f), LINK)
                for f, stem in LINK_COUNTERS.items()}
    readings = newest_counters(report.counters)
    for p in report.inventory.nvlinks:
        labels = [host, str(p.gpu), str(p.link)]
        up.add_metric(labels, 1 if p.state.value == "up" else 0)
        reading = readings.get((p.gpu, p.link))
        if reading is None:
            continue
        for field_name, family in counters.items():
            value = getattr(reading, field_name)
            if value is not None:
                family.add_metric(labels, value)
    yield up
    yield from counters.values()


def _counter_doc(field_name: str) -> str:
    if field_name in ("tx_bytes", "rx_bytes"):
        way = "transmitted" if field_name == "tx_bytes" else "received"
        return f"NVLink data bytes {way} (lifetime; judge the rate)."
    return f"NVLink {field_name.replace('_', ' ')} errors (lifetime; judge the increase)."


# --------------------------------------------------------------------------- per pair


def p2p_access(p2p: dict[P2PCap, P2PStatus], can_access_peer: bool | None) -> bool | None:
    """Reads and writes allowed (and the CUDA runtime agrees); None when nothing is known."""
    known = [s for s in (p2p.get(P2PCap.READ), p2p.get(P2PCap.WRITE)) if s is not None]
    if not known and can_access_peer is None:
        return None
    return all(s is P2PStatus.OK for s in known) and can_access_peer is not False


def pair_families(host: str, pairs: list[PairInfo]) -> Iterator[Metric]:
    width = _gauge("p2p_nvlink_links",
                   "NVLinks joining the pair (NVSwitch: the smaller active count of the two).",
                   PAIR)
    access = _gauge("p2p_access", "1 when P2P reads and writes are possible, else 0.", PAIR)
    info = _gauge("p2p_pair_info", "The unordered pair an ordered pair belongs to (always 1): "
                  "`pair` is 'low-high' by GPU index, what the PromQL pair rules page by, "
                  "once per pair whichever directions are low.", [*PAIR, "pair"])
    for p in pairs:
        labels = [host, str(p.src), str(p.dst)]
        width.add_metric(labels, p.nvlink_width)
        info.add_metric([*labels, f"{min(p.src, p.dst)}-{max(p.src, p.dst)}"], 1)
        allowed = p2p_access(p.p2p, p.can_access_peer)
        if allowed is not None:
            access.add_metric(labels, 1 if allowed else 0)
    yield from (width, access, info)


def result_families(host: str, view: AgentView, tests: frozenset[str]) -> Iterator[Metric]:
    bandwidth = _gauge("p2p_bandwidth_bytes_per_second",
                       "Newest measured bandwidth (ce_bidir: both directions summed).",
                       PAIR_TEST)
    latency = _gauge("p2p_latency_seconds", "Newest measured peer latency (pointer chase).",
                     PAIR)
    contended = _gauge("p2p_contended",
                       "1 when other traffic shared the links during the newest measurement.",
                       PAIR_TEST)
    copies = _gauge("gpu_copy_bandwidth_bytes_per_second",
                    "Newest measured copy bandwidth of one GPU: h2d, d2h (host <-> GPU over "
                    "its PCIe link), local (within its memory), a2a_ce and a2a_nccl (what it "
                    "sent its peers per second, every GPU sending to every other at once), "
                    "gdr_loopback (opt-in: its memory through its nearest RDMA NIC and back).",
                    [*GPU, "test"])
    assert view.latest is not None
    present = {g.index for g in view.latest.inventory.gpus}
    for (src, dst, test), r in sorted(view.results.items()):
        if test not in tests or r.value is None or not {src, dst} <= present:
            continue  # a GPU gone from the inventory: its old values would read healthy
        if src == dst:
            copies.add_metric([host, str(src), test], r.value)
            continue
        pair = [host, str(src), str(dst)]
        contended.add_metric([*pair, test], 1 if r.contended else 0)
        if test == TestName.LATENCY.value:
            latency.add_metric(pair, r.value)
        else:
            bandwidth.add_metric([*pair, test], r.value)
    yield from (bandwidth, latency, contended, copies)
