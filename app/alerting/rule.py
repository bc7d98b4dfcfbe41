"""What a rule is: a check over one host's data that returns the instances active now.

Modelled on a Prometheus alerting rule: a name, an expression (here a Python function over
peerwatch's own judgement, `app/analysis/health.py` and the server's queries), a `for`
duration an instance must stay active before it fires, labels and annotations. A rule also
carries its PromQL twins (`promql.Twin`) and the /metrics series they read, so that one
declaration is the rule in both places. Each `Finding` is one active instance: its
identifying labels (host, gpu, peer_gpu, link, test, ...), the figure that made it active,
and the words a person reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.alerting.promql import Twin


@dataclass(frozen=True)
class Finding:
    labels: dict[str, str]  # identifying labels except alertname and severity
    summary: str
    description: str  # with the figures
    dashboard: str  # a path on the server, e.g. /#/host/h?pair=3-5&test=ce_write
    value: float | None = None


@dataclass(frozen=True)
class Rule:
    name: str  # the alertname
    severity: str  # "critical" | "warning"
    for_s: float  # seconds an instance stays active before it fires
    check: Callable[[HostContext], list[Finding]]
    doc: str = ""  # when it fires, as docs/alerts.md lists it
    label_names: str = ""  # its identifying labels, in words, for docs/alerts.md
    series: tuple[str, ...] = ()  # the /metrics series its twins read, themselves or recorded
    twins: tuple[Twin, ...] = field(default=(), compare=False)

    def labels(self, finding: Finding) -> dict[str, str]:
        return {"alertname": self.name, "severity": self.severity, **finding.labels}


def dashboard_path(host: str, *, gpu: int | None = None, pair: tuple[int, int] | None = None,
                   test: str | None = None) -> str:
    query = []
    if pair is not None:
        query.append(f"pair={pair[0]}-{pair[1]}")
    elif gpu is not None:
        query.append(f"gpu={gpu}")
    if test is not None:
        query.append(f"test={test}")
    return f"/#/host/{host}" + (f"?{'&'.join(query)}" if query else "")

