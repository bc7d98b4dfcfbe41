"""A host as a graph: GPUs, the NVSwitch fabric and CPU sockets as nodes; NVLink and PCIe
connections as edges, each with the newest bandwidth across it and a verdict.

On an NVSwitch board every GPU's links go to the switch fabric (NVML cannot say which peer a
link reaches), so the graph has one GPU-switch edge per GPU, as wide as its active links. On
a direct-attached board each GPU pair joined by NVLink gets an edge of its link count. Pairs
with no NVLink get a PCIe edge with their path level (PIX ... SYS), and each GPU a PCIe edge
to its CPU socket with the generation and width it trained at.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from sqlalchemy.orm import Session

from peerwatch.app.analysis.fabric_health import LinkJudgement
from peerwatch.app.analysis.health import TestJudgement, worst
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.queries.health import host_health
from peerwatch.app.records.health import HostHealth
from peerwatch.app.runtime.config import Settings
from peerwatch.app.schemas.topology import (
    EdgeKind,
    NodeKind,
    TopologyEdge,
    TopologyNode,
    TopologyResponse,
)
from peerwatch.probes.report import LinkState, NvLinkPort, RemoteType, TestName

EDGE_TESTS = (TestName.CE_WRITE, TestName.CE_READ, TestName.SM_WRITE, TestName.SM_READ,
              TestName.STAGED)
SWITCH = "nvswitch"


def _gpu_id(i: int) -> str:
    return f"gpu{i}"


def _slowest(health: HostHealth, pairs: Iterable[tuple[int, int]]) -> TestJudgement | None:
    """The judged test with the lowest value over `pairs`, in the first test measured."""
    wanted = set(pairs)
    for test in EDGE_TESTS:
        found = [j for (s, d, t), j in health.tests.items()
                 if t is test and (s, d) in wanted and j.value is not None]
        if found:
            return min(found, key=lambda j: j.value or 0.0)
    return None


def _edge(edge_id: str, source: str, target: str, kind: EdgeKind, health: HostHealth,
          pairs: Iterable[tuple[int, int]], links: list[LinkJudgement],
          head: str, **fields: object) -> TopologyEdge:
    slowest = _slowest(health, pairs)
    verdicts = [j.verdict for j in links] + ([slowest.verdict] if slowest else [])
    verdict = worst(verdicts) if verdicts else Verdict.UNKNOWN
    bad = [j for j in links if j.verdict is not Verdict.HEALTHY]
    reason = head
    if bad:
        reason += f"; {bad[0].reason}"
    if slowest is not None:
        reason += f"; slowest: {slowest.reason}"
    return TopologyEdge(
        id=edge_id, source=source, target=target, kind=kind, verdict=verdict, reason=reason,
        test=slowest.test if slowest else None, latest_bps=slowest.value if slowest else None,
        expected_bps=slowest.expected if slowest else None,
        measured_at=slowest.latest.at if slowest and slowest.latest else None,
        **fields,  # type: ignore[arg-type]
    )


def _judged_links(judged: dict[tuple[int, int], LinkJudgement],
                  ports: Iterable[NvLinkPort]) -> list[LinkJudgement]:
    """The stored verdicts of `ports` (a port seen after the last judgement has none yet)."""
    return [j for p in ports if (j := judged.get((p.gpu, p.link))) is not None]


def _nvlink_edges(health: HostHealth) -> list[TopologyEdge]:
    fabric = health.fabric
    link_j = {(j.gpu, j.link): j for j in health.judgement.links}
    edges = []
    direct: dict[tuple[int, int], list] = defaultdict(list)
    for gpu in sorted(fabric.gpus):
        ports = fabric.links_of(gpu)
        to_switch = [p for p in ports if p.remote_type is RemoteType.NVSWITCH]
        for p in ports:
            if p.remote_type is RemoteType.GPU and p.remote_gpu is not None:
                direct[(min(gpu, p.remote_gpu), max(gpu, p.remote_gpu))].append(p)
        if to_switch:
            up = sum(1 for p in to_switch if p.state is LinkState.UP)
            peers = [pair for pair in fabric.pairs if gpu in pair]
            edges.append(_edge(
                f"{_gpu_id(gpu)}-{SWITCH}", _gpu_id(gpu), SWITCH, EdgeKind.NVLINK, health, peers,
                _judged_links(link_j, to_switch), f"{up}/{len(to_switch)} links up",
                width=up, links_total=len(to_switch),
                speed_bps=max((p.speed_bps or 0 for p in to_switch), default=None) or None))
    for (a, b), ports in sorted(direct.items()):
        mine = [p for p in ports if p.gpu == a] or ports
        up = sum(1 for p in mine if p.state is LinkState.UP)
        edges.append(_edge(
            f"{_gpu_id(a)}-{_gpu_id(b)}", _gpu_id(a), _gpu_id(b), EdgeKind.NVLINK, health,
            [(a, b), (b, a)], _judged_links(link_j, ports),
            f"NV{up}: {up}/{len(mine)} links up", width=up, links_total=len(mine),
            speed_bps=max((p.speed_bps or 0 for p in mine), default=None) or None))
    return edges


def _pcie_edges(health: HostHealth, sockets: dict[int, str]) -> list[TopologyEdge]:
    fabric = health.fabric
    edges = []
    for (s, d), pair in sorted(fabric.pairs.items()):
        if s < d and not pair.nvlink_width and not pair.via_nvswitch:
            edges.append(_edge(f"{_gpu_id(s)}-{_gpu_id(d)}", _gpu_id(s), _gpu_id(d),
                               EdgeKind.PCIE, health, [(s, d), (d, s)], [],
                               f"PCIe {pair.pcie_path.value} path", path_level=pair.pcie_path))
    for gpu, info in sorted(fabric.gpus.items()):
        pcie = info.pcie
        narrow = bool(pcie.width_current and pcie.width_max and
                      pcie.width_current < pcie.width_max)
        link = f"PCIe gen{pcie.gen_current} x{pcie.width_current}"
        reason = f"{link} of x{pcie.width_max}: downtrained" if narrow else link
        edges.append(TopologyEdge(
            id=f"{_gpu_id(gpu)}-{sockets[gpu]}", source=_gpu_id(gpu), target=sockets[gpu],
            kind=EdgeKind.PCIE, pcie_gen=pcie.gen_current, pcie_width=pcie.width_current,
            verdict=Verdict.DEGRADED if narrow else Verdict.HEALTHY, reason=reason))
    return edges


def _sockets(health: HostHealth) -> tuple[dict[int, str], list[TopologyNode]]:
    """GPU -> CPU socket node id, grouping GPUs by NUMA node or CPU affinity."""
    groups: dict[str, list[int]] = defaultdict(list)
    for gpu, info in sorted(health.fabric.gpus.items()):
        key = (f"numa {info.numa_node}" if info.numa_node is not None
               else f"cpus {info.cpu_affinity}" if info.cpu_affinity else "cpus unknown")
        groups[key].append(gpu)
    mapping, nodes = {}, []
    for i, (key, gpus) in enumerate(groups.items()):
        nodes.append(TopologyNode(id=f"cpu{i}", kind=NodeKind.CPU,
                                  label=f"CPU socket {i} ({key})", verdict=Verdict.HEALTHY,
                                  reason=f"{len(gpus)} GPU(s) attached: "
                                         f"{', '.join(f'GPU{g}' for g in gpus)}"))
        mapping.update({g: f"cpu{i}" for g in gpus})
    return mapping, nodes


def _switch_node(health: HostHealth) -> TopologyNode | None:
    fabric = health.fabric
    if not any(p.remote_type is RemoteType.NVSWITCH for p in fabric.nvlinks):
        return None
    pending = [g for g, info in fabric.gpus.items()
               if info.switch_fabric and info.switch_fabric.state not in (None, "completed")]
    if pending:
        return TopologyNode(id=SWITCH, kind=NodeKind.NVSWITCH, label="NVSwitch fabric",
                            verdict=Verdict.DEGRADED,
                            reason=f"fabric registration incomplete on GPU{pending[0]}")
    return TopologyNode(id=SWITCH, kind=NodeKind.NVSWITCH, label="NVSwitch fabric",
                        verdict=Verdict.HEALTHY,
                        reason=f"{len(fabric.gpus)} GPUs attached")


def host_topology(session: Session, settings: Settings, host: str) -> TopologyResponse:
    health = host_health(session, settings, host)
    infos = health.fabric.gpus
    nodes = [TopologyNode(id=_gpu_id(g.gpu), kind=NodeKind.GPU,
                          label=f"GPU{g.gpu} {infos[g.gpu].name}" if g.gpu in infos
                          else f"GPU{g.gpu} (missing)",
                          gpu=g.gpu, verdict=g.verdict, reason=g.reason)
             for g in health.gpus]
    switch = _switch_node(health)
    if switch is not None:
        nodes.append(switch)
    sockets, cpu_nodes = _sockets(health)
    nodes += cpu_nodes
    edges = _nvlink_edges(health) + _pcie_edges(health, sockets)
    return TopologyResponse(host=health.host.name, nodes=nodes, edges=edges,
                            judged_at=health.generated_at)
