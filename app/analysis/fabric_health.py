"""Verdicts for links, GPUs and the host, built on the pair verdicts of `health.py`.

- link: down when NVML says so; degraded when its replay/recovery counters grow faster
  than tolerated (DCGM treats any increase as a failure) or its CRC flit counter grows
  faster than `crc_rate_per_s`. Judged by rate of growth, never by lifetime size.
  CRC_DATA and ECC_DATA are NOT judged: on NVLink 4 they count errors the link corrected,
  and they grow under load on healthy hardware (measured on the lent H200 pair, 2026-11-30:
  10-142 per second per link during a contended sweep, every transfer verified, no replay,
  recovery or flit CRC). They are kept, exported and charted, never turned into a verdict.
  A port its SKU leaves unwired by design (`fabric_expect.unused_by_design`) is healthy.
- GPU: down when it vanished from the inventory, when every NVLink it should have is down,
  or when every measured pair it is part of is down; degraded when fewer links are up than
  its SKU wires (its NVSwitch width is reduced), a link is degraded, its PCIe link trained
  narrower than its maximum, one of its own tests (h2d, d2h: host <-> GPU over its PCIe link;
  local) is degraded (slow against what its PCIe link offers or its own baseline, sustained)
  or down (failing), or its copies are bad with every peer (`attribution.py`'s pattern),
  or with a peer after an Xid it logged (`xid_attribution.py`);
  a pair fault (bad between two GPUs whose other pairs work) leaves both ends healthy, to be
  kept apart (`pair_faults.py`); the fabric contradictions of `fabric_state.py` (fabric
  not COMPLETED, registration failed, fabric unhealthy, peer copies failing with every peer
  behind up links) add their own reasons and actions.
- host: unknown when stale or never measured; down when every GPU is down; degraded when
  anything on it is not healthy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from peerwatch.app.analysis.attribution import PatternFault, explained_elsewhere, own_fault
from peerwatch.app.analysis.fabric_state import (
    GpuFabricVerdict,
    HostFabricVerdict,
    judge_gpu_fabric,
)
from peerwatch.app.analysis.health import Judgement, PairJudgement, TestJudgement, Thresholds
from peerwatch.app.analysis.switch_fold import REDUCED, reduced_only
from peerwatch.app.analysis.text import fmt_rate
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import GpuInfo, LinkState, NvLinkPort
from peerwatch.probes.test_kinds import kind_of

ERROR_COUNTERS = ("replay", "recovery")
PEER_SLOW = "peer_slow"  # the GPU's copies run slow with every peer: GPUPeerCopiesSlow's
CRC_COUNTERS = ("crc_flit",)
CORRECTED_COUNTERS = ("crc_data", "ecc_data")  # stored and shown, never judged (see above)


@dataclass(frozen=True)
class LinkJudgement(Judgement):
    gpu: int
    link: int
    flapping: bool = False  # degraded for going down again and again, not for its errors


@dataclass(frozen=True)
class GpuJudgement(Judgement):
    gpu: int
    fabric: tuple[str, ...] = ()  # kinds of fabric contradiction found (fabric_state.py)


@dataclass(frozen=True)
class HostJudgement(Judgement):
    gpus: tuple[GpuJudgement, ...] = ()
    links: tuple[LinkJudgement, ...] = ()
    pairs: tuple[PairJudgement, ...] = ()
    fabric: tuple[str, ...] = ()  # kinds of host-level fabric contradiction (Fabric Manager)

    @property
    def healthy_gpus(self) -> list[int]:
        return [g.gpu for g in self.gpus if g.verdict is Verdict.HEALTHY]


@dataclass(frozen=True)
class GpuFacts:
    """What a GPU verdict needs beyond pairs and links."""

    info: GpuInfo | None  # None: missing from the newest inventory
    ports: Sequence[NvLinkPort] = field(default_factory=tuple)
    pcie_replay_per_s: float | None = None
    design_overrides: Mapping[str, int] | None = None  # GPU name -> NVLinks wired by design
    pcie_check_generation: bool = True  # a generation below max is degraded, as it alerts
    tests: Sequence[TestJudgement] = ()  # its per-GPU tests (h2d, d2h, local), judged
    had: int = 0  # NVLink ports it has had, listed now or before (an unlisted one counts)
    pattern: PatternFault | None = None  # bad with every peer (`attribution.py`)
    event: PatternFault | None = None  # pairs it explains by an Xid (`xid_attribution.py`)
    switch: str | None = None  # the NVSwitch whose fault explains its down ports


def judge_link(port: NvLinkPort, rates: Mapping[str, float | None],
               th: Thresholds, unused: bool = False) -> LinkJudgement:
    """One NVLink port from its NVML state and its counters' growth per second.
    `unused`: the GPU's SKU leaves this port unwired by design (see `unused_by_design`)."""
    name = f"GPU{port.gpu} link {port.link}"
    if unused and port.state is LinkState.DOWN:
        return LinkJudgement(Verdict.HEALTHY, f"{name} not wired (by design for this SKU)",
                             port.gpu, port.link)
    if port.state is LinkState.DOWN:
        return LinkJudgement(Verdict.DOWN, f"{name} is down (NVML link state)", port.gpu,
                             port.link)
    problems = [f"{c} errors growing {fmt_rate(r)}" for c in ERROR_COUNTERS
                if (r := rates.get(c)) is not None and r > th.error_rate_per_s]
    problems += [f"{c} errors growing {fmt_rate(r)} (over {fmt_rate(th.crc_rate_per_s)})"
                 for c in CRC_COUNTERS
                 if (r := rates.get(c)) is not None and r > th.crc_rate_per_s]
    if problems:
        return LinkJudgement(Verdict.DEGRADED, f"{name}: {'; '.join(problems)}", port.gpu,
                             port.link)
    speed = f", {port.speed_bps / 1e9:.1f} GB/s" if port.speed_bps else ""
    version = f" NVLink {port.version}" if port.version else ""
    return LinkJudgement(Verdict.HEALTHY, f"{name} up{version}{speed}, no error growth",
                         port.gpu, port.link)


def _gpu_problems(gpu: int, facts: GpuFacts, links: Sequence[LinkJudgement],
                  pairs: Sequence[PairJudgement],
                  fabric: GpuFabricVerdict) -> tuple[list[str], list[str]]:
    """(reasons it is down, reasons it is degraded)."""
    down: list[str] = []
    degraded: list[str] = []
    info = facts.info
    assert info is not None
    for finding in fabric.findings:
        (down if finding.verdict is Verdict.DOWN else degraded).append(finding.text)
    sick = [j for j in links if j.verdict is Verdict.DEGRADED]
    if sick:
        degraded.append(sick[0].reason + (f" (+{len(sick) - 1} more links)" if sick[1:] else ""))
    pcie = info.pcie
    if pcie.width_current and pcie.width_max and pcie.width_current < pcie.width_max:
        degraded.append(f"PCIe trained x{pcie.width_current} of x{pcie.width_max}")
    if (facts.pcie_check_generation and pcie.gen_current and pcie.gen_max
            and pcie.gen_current < pcie.gen_max):
        degraded.append(f"PCIe trained Gen{pcie.gen_current} of Gen{pcie.gen_max}")
    if facts.pcie_replay_per_s:
        degraded.append(f"PCIe replays growing {fmt_rate(facts.pcie_replay_per_s)}")
    for t in facts.tests:  # h2d/d2h/local slow or failing: the reason names figure and basis
        if kind_of(t.test).expect.model == "nic":
            continue  # GPUDirect through the NIC: the NIC path's, not the GPU's (network.md)
        if t.verdict is Verdict.DOWN:
            down.append(t.reason)
        elif t.verdict is Verdict.DEGRADED:
            degraded.append(t.reason)
    if facts.event is not None:  # its Xid alert is the page; this says what it broke
        (down if facts.event.failing else degraded).append(facts.event.text)
    if facts.pattern is not None:
        if any(f.kind == "peer_copies" for f in fabric.findings):
            return down, degraded  # that finding says it, with its action
        (down if facts.pattern.failing else degraded).append(facts.pattern.text)
        return down, degraded
    # a pair fault (`pair_faults.py`) is the pair's: both ends stay healthy, kept apart
    return down, degraded


def judge_gpu(gpu: int, facts: GpuFacts, links: Sequence[LinkJudgement],
              pairs: Sequence[PairJudgement]) -> GpuJudgement:
    """`links`: this GPU's link verdicts; `pairs`: pairs with this GPU as src or dst."""
    if facts.info is None:
        return GpuJudgement(Verdict.DOWN, f"GPU{gpu} is missing from the newest inventory",
                            gpu)
    fabric = judge_gpu_fabric(gpu, facts.info, facts.ports, pairs, facts.design_overrides,
                              facts.had, facts.switch)
    down, degraded = _gpu_problems(gpu, facts, links, pairs, fabric)
    alone = facts.pattern is not None and down + degraded == [facts.pattern.text]
    kinds = tuple(sorted({f.kind for f in fabric.findings if f.kind}
                         | ({PEER_SLOW} if alone else set())  # else another fault's page
                         | ({REDUCED} if not down and reduced_only(  # a lost switch's only
                             [(f.kind, f.text) for f in fabric.findings], degraded) else set())))
    if down:
        return GpuJudgement(Verdict.DOWN, f"GPU{gpu}: " + "; ".join(down + degraded), gpu, kinds)
    if degraded:
        return GpuJudgement(Verdict.DEGRADED, f"GPU{gpu}: " + "; ".join(degraded), gpu, kinds)
    return GpuJudgement(Verdict.HEALTHY, _healthy_text(gpu, facts, pairs, fabric), gpu, kinds)


def _healthy_text(gpu: int, facts: GpuFacts, pairs: Sequence[PairJudgement],
                  fabric: GpuFabricVerdict) -> str:
    bad = [p for p in pairs if own_fault(p)]
    up = sum(1 for p in facts.ports if p.state is LinkState.UP)
    ports = fabric.expectation.ports
    links_text = f"{up}/{ports} NVLinks up" if facts.ports else "no NVLinks"
    if fabric.expectation.by_design_short:
        links_text += f" (as designed: {fabric.expectation.design_links} wired)"
    elif facts.ports and not fabric.expectation.nvlink:
        links_text = f"no NVLink in use ({fabric.expectation.basis})"
    judged = sum(1 for p in pairs if p.verdict is not Verdict.UNKNOWN)
    others = [p for p in pairs if explained_elsewhere(p, gpu)]
    text = f"GPU{gpu}: {links_text}, {judged - len(bad) - len(others)} of {judged} measured " \
           "pairs healthy"
    if bad:
        text += f" (not: {', '.join(f'GPU{p.src}->GPU{p.dst}' for p in bad[:4])})"
        peers = sorted({p.dst if p.src == gpu else p.src for p in bad})
        why = ("its other peers work" if any(p.verdict is Verdict.HEALTHY for p in pairs)
               else "no other peer measured to tell it from a GPU fault")
        text += f"; kept apart from {', '.join(f'GPU{g}' for g in peers)} (a pair fault: {why})"
    if others:
        text += f"; {len(others)} explained by {others[0].cause} (not this GPU's fault)"
    return text


def judge_host(host: str, gpus: Sequence[GpuJudgement], links: Sequence[LinkJudgement],
               pairs: Sequence[PairJudgement], stale_for: str | None,
               fabric: HostFabricVerdict | None = None) -> HostJudgement:
    """`stale_for`: how long since the last report, when the host is stale, else None.
    `fabric`: `judge_host_fabric`'s verdict; its host-level findings (Fabric Manager down)
    make the host degraded even while every GPU is healthy."""

    kinds = tuple(sorted({f.kind for f in fabric.findings if f.kind})) if fabric else ()

    def verdict(v: Verdict, reason: str) -> HostJudgement:
        return HostJudgement(v, reason, tuple(gpus), tuple(links), tuple(pairs), kinds)

    if stale_for is not None:
        return verdict(Verdict.UNKNOWN, f"{host}: no report for {stale_for}")
    if not gpus:
        return verdict(Verdict.UNKNOWN, f"{host}: no GPUs reported")
    if all(g.verdict is Verdict.DOWN for g in gpus):
        return verdict(Verdict.DOWN, f"{host}: all {len(gpus)} GPUs down ({gpus[0].reason})")
    bad_gpus = [g for g in gpus if g.verdict in (Verdict.DEGRADED, Verdict.DOWN)]
    bad_pairs = [p for p in pairs if p.verdict in (Verdict.DEGRADED, Verdict.DOWN)]
    bad_links = [j for j in links if j.verdict in (Verdict.DEGRADED, Verdict.DOWN)]
    host_fabric = [f.text for f in fabric.findings] if fabric is not None else []
    if host_fabric and not (bad_gpus or bad_pairs or bad_links):
        return verdict(Verdict.DEGRADED, f"{host}: {'; '.join(host_fabric)}")
    if bad_gpus or bad_pairs or bad_links:
        first = (bad_gpus or bad_pairs or bad_links)[0]
        counts = [f"{len(bad_gpus)} of {len(gpus)} GPUs", f"{len(bad_pairs)} of "
                  f"{len(pairs)} pairs", f"{len(bad_links)} of {len(links)} links"]
        return verdict(Verdict.DEGRADED,
                       f"{host}: {', '.join(counts)} not healthy; {first.reason}")
    judged_pairs = [p for p in pairs if p.verdict is not Verdict.UNKNOWN]
    if pairs and not judged_pairs:
        return verdict(Verdict.UNKNOWN, f"{host}: no pair measured yet")
    return verdict(Verdict.HEALTHY, f"{host}: {len(gpus)} GPUs, {len(judged_pairs)} pairs "
                                    f"and {len(links)} links healthy")
