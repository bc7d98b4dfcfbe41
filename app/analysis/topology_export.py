"""The measured, judged network as the schedulers read it: a Slurm `topology.conf`
(topology/tree: a switch per leaf naming its nodes, one per spine group naming its leaves)
and Kubernetes node labels (what Topograph writes from static data; Kueue's
Topology-Aware Scheduling reads such levels). Written from the map the pair tests confirm:
a host whose network path a fault names keeps its place (the wiring did not move) but is
named in a comment and labelled `degraded`, so the scheduler's own policy (or drain) acts.
Pure (docs/network.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from peerwatch.app.analysis.network import NetworkJudgement, Place

LABEL = "network.peerwatch.io"


def slurm_topology(places: Mapping[str, Place], j: NetworkJudgement) -> str:
    leaves: dict[str, list[str]] = defaultdict(list)
    spines: dict[str, set[str]] = defaultdict(set)
    for host, p in sorted(places.items()):
        leaves[p.leaf].append(host)
        if p.spine:
            spines[p.spine].add(p.leaf)
    lines = ["# topology.conf written by peerwatch from its network map and the pair tests "
             "(GET /api/v1/network/topology.conf); TopologyPlugin=topology/tree"]
    lines += [f"# peerwatch: {f.kind} {f.subject}: {f.reason}" for f in j.faults]
    lines += [f"SwitchName={leaf} Nodes={','.join(hosts)}"
              for leaf, hosts in sorted(leaves.items())]
    lines += [f"SwitchName={spine} Switches={','.join(sorted(ls))}"
              for spine, ls in sorted(spines.items())]
    return "\n".join(lines) + "\n"


def node_labels(places: Mapping[str, Place], j: NetworkJudgement) -> dict[str, dict[str, str]]:
    bad = {h for f in j.faults if f.kind in ("host", "leaf") for h in f.hosts}
    bad |= {f.subject for f in j.faults if f.kind == "host"}
    out = {}
    for host, p in sorted(places.items()):
        labels = {f"{LABEL}/leaf": p.leaf, f"{LABEL}/path": "degraded" if host in bad
                  else "healthy"}
        if p.spine:
            labels[f"{LABEL}/spine"] = p.spine
        if p.domain:
            labels[f"{LABEL}/nvlink-domain"] = p.domain
        out[host] = labels
    return out
