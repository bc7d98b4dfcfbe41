"""All-to-all on the simulated machine: every GPU sends one buffer to every other at once.

What each GPU's figure is (what it sent to its peers, per second of its own time) follows
from its flows' rates, each flow limited by what it shares:
- behind NVSwitch, a GPU's NVLink ports carry all its outgoing flows (and a peer's ports all
  its incoming ones), so each flow gets ports x link rate / (flows sharing them): a GPU
  still sends at near its full NVLink bandwidth;
- on a direct NVLink mesh each pair's own links carry its flow alone;
- over PCIe (and staged through host memory) a GPU's one PCIe link carries all its flows
  that take it, each way: shared and contended, so the GPU gets its link's rate, split.
A fault on a flow's path (a degraded link, a throttled or busy GPU) slows that flow; a GPU's
figure is set by its slowest flow, as a real all-to-all step waits for its last buffer.
With copy engines a GPU's own time ends when its sends have landed; NCCL's kernel on a GPU
ends when it has also received from every peer, so a slow flow slows both of its ends.
A GPU that hangs (`TransferHangs`) hangs the whole test (`simulated.py`): no figure at all.

Efficiencies: the kind's own `expect` row (nothing is measured yet on a multi-GPU host), so a
healthy simulated host measures what the server expects of its topology.
"""

from __future__ import annotations

from collections import Counter

from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.sim.simtopo import Route, SimTopology
from peerwatch.probes.test_kinds import kind_of

Flow = tuple[int, int, float]  # sender, receiver, bytes


def _resource(topo: SimTopology, a: int, route: Route) -> str:
    """Which of `a`'s links a flow leaves (or arrives) by: its NVLink ports behind a switch,
    the pair's own links on a mesh, or its PCIe link."""
    if route.kind != "nvlink":
        return "pcie"
    return "nvswitch" if topo.preset.nvlink.fabric == "nvswitch" else "direct"


def flow_rates(topo: SimTopology, spec: TestSpec,
               factor: dict[tuple[int, int], float]) -> dict[tuple[int, int], float]:
    """Bytes/s of every directed flow of the all-to-all over `spec.gpus`; `factor`: each
    flow's slowdown from the faults on its path (1.0: none)."""
    expect = kind_of(spec.test).expect
    gpus = spec.gpus
    routes = {(a, b): topo.route(a, b) for a in gpus for b in gpus if a != b}
    out_count: Counter[tuple[int, str]] = Counter()
    in_count: Counter[tuple[int, str]] = Counter()
    for (a, b), r in routes.items():
        out_count[(a, _resource(topo, a, r))] += 1
        in_count[(b, _resource(topo, b, r))] += 1
    rates = {}
    for (a, b), r in routes.items():
        kind = _resource(topo, a, r)
        if kind == "direct":
            rate = r.raw_bps * (expect.nvlink or 0.0)
        elif kind == "nvswitch":
            eff = expect.nvlink or 0.0
            rate = min(len(topo.active(a)) * topo.link_bps * eff / out_count[(a, kind)],
                       len(topo.active(b)) * topo.link_bps * eff / in_count[(b, kind)])
        else:
            eff = (expect.pcie or 0.0) if r.kind == "pcie" else expect.staged
            rate = min(topo.pcie_bps(a) * eff / out_count[(a, kind)],
                       topo.pcie_bps(b) * eff / in_count[(b, kind)])
        rates[(a, b)] = rate * factor.get((a, b), 1.0)
    return rates


def per_gpu(spec: TestSpec, rates: dict[tuple[int, int], float], *, both_ends: bool
            ) -> dict[int, float]:
    """Each GPU's figure: (peers x buffer) over the time its slowest flow takes; with
    `both_ends` (NCCL) its incoming flows count too."""
    n = len(spec.gpus)
    out = {}
    for g in spec.gpus:
        mine = [v for (a, b), v in rates.items() if a == g or (both_ends and b == g)]
        slowest = min(mine) if mine else 0.0
        out[g] = (n - 1) * slowest
    return out


def wire_flows(topo: SimTopology, spec: TestSpec) -> list[Flow]:
    """The bytes each NVLink flow put on the wire over the whole test, warm-up included."""
    per_flow = float(spec.bytes_per_copy * (spec.copies * spec.samples + spec.warmup))
    return [(a, b, per_flow) for a in spec.gpus for b in spec.gpus
            if a != b and topo.route(a, b).kind == "nvlink"]
