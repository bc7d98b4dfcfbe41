"""The Prometheus text format for the agent's own families, written in one pass.

client_python's `generate_latest` validates and escapes every label name of every sample
(an 8-GPU host has ~2100 series, so that cost counts on a busy machine).
The agent's metric and label names are fixed and valid by construction (`probes/agent/metrics.py`),
so only label values need escaping; the output is byte for byte what `generate_latest`
writes for gauge and counter families (tests/probes/test_agent_metrics.py compares them).
Anything else (histograms, the process collector) still goes through `generate_latest`.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import Metric
from prometheus_client.utils import floatToGoString


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def render(families: Iterable[Metric]) -> bytes:
    """Gauge and counter families (no timestamps, no `_created`) as text exposition."""
    out: list[str] = []
    for family in families:
        if family.type not in ("gauge", "counter"):
            raise ValueError(f"render() writes gauges and counters, not {family.type}")
        name = family.name + ("_total" if family.type == "counter" else "")
        doc = family.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {name} {doc}\n# TYPE {name} {family.type}\n")
        for s in family.samples:
            if s.labels:
                labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(s.labels.items()))
                out.append(f"{s.name}{{{labels}}} {floatToGoString(s.value)}\n")
            else:
                out.append(f"{s.name} {floatToGoString(s.value)}\n")
    return "".join(out).encode()
