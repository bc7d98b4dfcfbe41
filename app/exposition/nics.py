"""/metrics families of the hosts' RDMA NIC ports, from the NIC verdicts stored with each
host's judgement (app/analysis/nic_health.py): what the NIC alerts' PromQL twins read, and
each port's state, rate and lifetime counters for dashboards (rate() them in PromQL: a
counter's size says nothing)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from peerwatch.app.analysis.nic_health import JUDGED
from peerwatch.app.exposition.snapshot import HostFacts

PORT = ["host", "nic", "port"]


def nic_families(hosts: list[HostFacts]) -> Iterator[Metric]:
    problem = GaugeMetricFamily(
        "peerwatch_nic_port_problem", "1 for each finding of an RDMA NIC port's stored "
        "verdict: kind down, flap, link_errors, rate or congestion (nic_health.py).",
        labels=[*PORT, "kind"])
    up = GaugeMetricFamily("peerwatch_nic_port_up", "1 when the RDMA NIC port's newest "
                           "state is ACTIVE, else 0.", labels=PORT)
    rate = GaugeMetricFamily("peerwatch_nic_port_rate_bytes_per_second", "The port's "
                             "trained rate (sysfs `rate`: active width x speed), in bytes "
                             "per second.", labels=PORT)
    counters = CounterMetricFamily(
        "peerwatch_nic_port_events", "The port's newest lifetime counters the NIC judge "
        "reads (symbol_error, link_downed, port_xmit_discards ...; the kernel's "
        "sysfs-class-infiniband says what each counts).", labels=[*PORT, "counter"])
    for h in hosts:
        for p in h.nics:
            labels = [h.host, str(p["nic"]), str(p["port"])]
            for f in p.get("findings", ()):
                problem.add_metric([*labels, f["kind"]], 1)
            if p.get("state") is not None:
                up.add_metric(labels, 1 if p["state"] in ("ACTIVE", "ACTIVE_DEFER") else 0)
            if p.get("rate_gbps") is not None:
                rate.add_metric(labels, p["rate_gbps"] * 1e9 / 8)
            for name, value in sorted((p.get("counters") or {}).items()):
                if name in JUDGED:
                    counters.add_metric([*labels, name], value)
    yield from (problem, up, rate, counters)
