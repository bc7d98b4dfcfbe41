"""The PromQL twins of the alerts `peerwatch drain` writes with its actions
(`app/services/drain.py`, DRAIN_ALERTS): no server rule evaluates them, the drain controller
opens and resolves them, so they are declared here with their alertname and severity.
They read what the server's /metrics exports of the drain records (`app/exposition/drain.py`);
`max by` pages once whatever the number of server replicas scraped.
"""

from __future__ import annotations

from peerwatch.app.alerting.promql import PromAlert, Twin

DRAIN_TWINS: tuple[PromAlert, ...] = (
    PromAlert("DrainBreakerOpen", "critical", Twin(
        comment=(
            "peerwatch drain (docs/drain.md), from the server's /metrics; `max by` pages once "
            "whatever the number of server replicas scraped."
        ),
        expr="max by (scheduler) (peerwatch_drain_breaker_open) == 1",
        for_="0m",
        annotations={
            "summary": (
                "peerwatch drain's breaker for {{ $labels.scheduler }} is open: no node is "
                "taken out until a person resets it"
            ),
            "description": (
                "Too many nodes were to be taken out of {{ $labels.scheduler }} at once; look "
                "at GET /api/v1/actions, then reset with `peerwatch drain --reset-breaker`. "
                "Recovered nodes are still put back."
            ),
            "dashboard": "/",
        },
    )),
    PromAlert("NodeTakenOutByPeerwatch", "warning", Twin(
        expr="max by (host, scheduler) (peerwatch_drain_node_out) == 1",
        for_="0m",
        annotations={
            "summary": "{{ $labels.host }} taken out of {{ $labels.scheduler }} by peerwatch",
            "description": (
                "peerwatch drain took {{ $labels.host }} out of {{ $labels.scheduler }}; the "
                "reason is on the node (Slurm: sinfo -R) and in GET "
                "/api/v1/actions?host={{ $labels.host }}."
            ),
            "dashboard": "/#/host/{{ $labels.host }}",
        },
    )),
)

# When each fires and its labels, in words, for docs/alerts.md (the server's rules carry
# theirs in `Rule.doc` and `Rule.label_names`).
DRAIN_DOCS: dict[str, tuple[str, str]] = {
    "DrainBreakerOpen": (
        "`peerwatch drain`'s breaker is open: no node is taken out until a person resets it "
        "(act mode)", "scheduler"),
    "NodeTakenOutByPeerwatch": (
        "`peerwatch drain` took the node out of its scheduler (act mode); written with the "
        "action, resolved when it is returned ([drain.md](drain.md))", "host, scheduler"),
}
