"""Judge a GPU's fabric state against what it should be: contradictions, each with an action.

Operators' trackers show the same fabric faults again and again, each hidden by a reading
that looks fine on its own: links Active while P2P is dead and the fabric manager reports
success; Fabric Manager down for weeks with every GPU "healthy"; pages for links that were
still training after a reboot; SKUs failing fixed thresholds because they wire 12 of their 18
links. So each finding here names the contradiction and what to do about it:

    fabric not COMPLETED (in_progress): P2P cannot be trusted          -> degraded / down
    fabric registration status <error>                                 -> down
    fabric health unhealthy / limited capacity (mask issues)           -> degraded
    NVLinks lost with a faulty NVSwitch, some still up (switch_fold.py) -> degraded,
                                        bandwidth reduced, pairs judged as measured
    k of n NVLinks wired by design up (all down: down)                 -> degraded / down
    links up, fabric COMPLETED, P2P supported, but peer copies fail    -> down, only with
                                        every peer and where every premise holds; a pair
                                        failing between two GPUs whose other pairs work is
                                        the pair's fault, no GPU's (`attribution.py`,
                                        `pair_faults.py`)
    Fabric Manager installed but not running on an NVSwitch host       -> degraded (host)

The expectation (`fabric_expect.py`) comes first, so a PCIe box, a single board and a
12-of-18 SKU are healthy as built. Pure: plain values in, verdicts out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from peerwatch.app.analysis.fabric_expect import FabricExpectation, expect_gpu
from peerwatch.app.analysis.health import PairJudgement
from peerwatch.app.analysis.verdict import SEVERITY, Verdict
from peerwatch.probes.report import FabricManagerInfo, GpuInfo, LinkState, NvLinkPort
from peerwatch.probes.test_kinds import kind_of

NOT_COMPLETED = {"not_started": Verdict.DOWN, "in_progress": Verdict.DEGRADED}
# what to do about each registration finding (also the drain reason's last words)
TRAIN_ACTION = ("wait for Fabric Manager to finish training; if it stays, check the "
                "nvidia-fabricmanager log and reset the GPU")
REGISTER_ACTION = "restart nvidia-fabricmanager, then reset the GPU"
HEALTH_ACTION = "expect reduced P2P bandwidth; check NVSwitch links and the Fabric Manager log"


@dataclass(frozen=True)
class FabricFinding:
    """One contradiction: what is wrong and what to do about it."""

    verdict: Verdict
    what: str
    action: str  # "" where the finding is a plain fact (links down: the link rules act)
    kind: str = ""  # registration | status | health | capacity | links | switch |
    # peer_copies | fabric_manager
    short: str = ""  # why the GPU's pairs cannot be trusted, for theirs ("fabric in progress")

    @property
    def text(self) -> str:
        return f"{self.what}; {self.action}" if self.action else self.what


@dataclass(frozen=True)
class GpuFabricVerdict:
    gpu: int
    verdict: Verdict
    reason: str
    expectation: FabricExpectation
    findings: tuple[FabricFinding, ...] = ()


@dataclass(frozen=True)
class HostFabricVerdict:
    verdict: Verdict
    reason: str
    gpus: tuple[GpuFabricVerdict, ...] = ()
    findings: tuple[FabricFinding, ...] = ()  # host-level ones (Fabric Manager)


def _registration(info: GpuInfo, exp: FabricExpectation) -> list[FabricFinding]:
    fab = info.switch_fabric
    if not exp.registration or fab is None:
        return []
    out = []
    if fab.state != "completed":
        out.append(FabricFinding(
            NOT_COMPLETED.get(fab.state or "", Verdict.DOWN),
            f"fabric not COMPLETED ({fab.state}): P2P cannot be trusted",
            TRAIN_ACTION, "registration",
            f"fabric {(fab.state or 'unknown').replace('_', ' ')}"))
    if fab.status not in (None, "success"):
        out.append(FabricFinding(
            Verdict.DOWN, f"fabric registration failed (status {fab.status})",
            REGISTER_ACTION, "status",
            f"fabric registration failed ({fab.status})"))
    if fab.health in ("unhealthy", "limited_capacity") or fab.health_issues:
        issues = f" ({', '.join(fab.health_issues)})" if fab.health_issues else ""
        # limited capacity is a COMPLETED fabric with less bandwidth, not one not ready:
        # its pairs are judged by what they measure (kind `capacity`, not `health`)
        kind = "capacity" if fab.health == "limited_capacity" else "health"
        out.append(FabricFinding(
            Verdict.DEGRADED, f"fabric health {fab.health or 'reports issues'}{issues}",
            HEALTH_ACTION, kind, f"fabric health {fab.health or 'reports issues'}"))
    return out


def _links(gpu: int, ports: Sequence[NvLinkPort], exp: FabricExpectation,
           switch: str | None = None) -> list[FabricFinding]:
    """`switch`: the NVSwitch whose fault explains the GPU's down ports (`switch_fold.py`):
    still up on some, the GPU is not cut off, only its bandwidth reduced (kind `switch`)."""
    if not exp.nvlink or not ports:
        return []
    up = sum(1 for p in ports if p.state is LinkState.UP)
    if up == 0:
        return [FabricFinding(Verdict.DOWN, f"all {exp.design_links} NVLinks down", "",
                              "links", "has every NVLink down")]
    if up < exp.design_links and switch is not None:
        return [FabricFinding(Verdict.DEGRADED, f"{up}/{exp.design_links} NVLinks up, the "
                              f"rest lost with NVSwitch {switch}: bandwidth reduced to "
                              f"{up}/{exp.design_links}, not cut off", "", "switch",
                              f"lost NVLinks with NVSwitch {switch}")]
    if up < exp.design_links:
        return [FabricFinding(Verdict.DEGRADED, f"{up}/{exp.design_links} NVLinks up", "",
                              "links", f"has {up}/{exp.design_links} NVLinks up")]
    return []


def _peer_copies(gpu: int, info: GpuInfo, ports: Sequence[NvLinkPort],
                 exp: FabricExpectation, pairs: Sequence[PairJudgement],
                 premise_broken: bool) -> list[FabricFinding]:
    """Links up, fabric COMPLETED and P2P supported, yet the newest peer copies fail.

    Only where every premise holds (`premise_broken`: another finding of this GPU already
    says the fabric or its links are not as they should be, and that finding owns the
    page), and only when the GPU fails with every peer (`attribution.py`'s pattern): a pair
    explained by another GPU is that GPU's, a pair whose P2P is unavailable is
    P2PAccessLost's, and a pair failing between two GPUs whose other pairs work is the
    pair's own fault (PairCopiesFailing), which leaves both ends healthy."""
    if not exp.nvlink or premise_broken:
        return []
    if sum(1 for p in ports if p.state is LinkState.UP) < max(exp.design_links, 1):
        return []
    fab = info.switch_fabric
    if exp.registration and (fab is None or fab.state != "completed"):
        return []  # already explained by the registration finding
    mine = [p for p in pairs if gpu in (p.src, p.dst)
            and ((p.explained_by == gpu and not p.by_event)  # an Xid's: XidFault's page
                 or (p.explained_by is None and p.cause is None))]
    failed = [(p, t) for p in mine for t in p.tests  # a failure first: most tests have none
              if t.latest is not None and t.latest.error is not None
              and kind_of(t.test).peer_to_peer]
    if not failed:
        return []
    pair, test = failed[0]
    state = "fabric COMPLETED" if exp.registration else "direct NVLink"
    more = f" (+{len(failed) - 1} more)" if failed[1:] else ""
    if not any(p.explained_by == gpu for p, _ in failed):
        return []  # a pair fault: the pair's page (PairCopiesFailing), both ends healthy
    return [FabricFinding(
        Verdict.DOWN,
        f"links up and {state} but peer copies fail with every peer: GPU{pair.src}->"
        f"GPU{pair.dst} {test.test.value}: {test.latest.error if test.latest else ''}{more}",
        "P2P is broken behind a healthy-looking fabric; drain the GPU, reset it (or restart "
        "nvidia-fabricmanager) and rerun the sweep", "peer_copies")]


def _summary(gpu: int, ports: Sequence[NvLinkPort], exp: FabricExpectation) -> str:
    if not exp.nvlink:
        return f"GPU{gpu}: {exp.basis}"
    up = sum(1 for p in ports if p.state is LinkState.UP)
    design = (f", as designed ({exp.design_links} of {exp.ports} wired)"
              if exp.by_design_short else "")
    return f"GPU{gpu}: {up}/{exp.ports} NVLinks up{design}; {exp.basis}"


def judge_gpu_fabric(gpu: int, info: GpuInfo, ports: Sequence[NvLinkPort],
                     pairs: Sequence[PairJudgement] = (),
                     overrides: Mapping[str, int] | None = None,
                     had: int = 0, switch: str | None = None) -> GpuFabricVerdict:
    """One GPU's fabric: registration, links against the design, peer copies.
    `had`: ports the GPU has had (see `expect_gpu`); `switch`: see `_links`."""
    exp = expect_gpu(info, ports, overrides, had)
    findings = _registration(info, exp) + _links(gpu, ports, exp, switch)
    findings += _peer_copies(gpu, info, ports, exp, pairs, bool(findings))
    if not findings:
        return GpuFabricVerdict(gpu, Verdict.HEALTHY, _summary(gpu, ports, exp), exp)
    verdict = max((f.verdict for f in findings), key=SEVERITY.__getitem__)
    reason = f"GPU{gpu}: " + "; ".join(f.text for f in findings)
    return GpuFabricVerdict(gpu, verdict, reason, exp, tuple(findings))


def fabric_manager_finding(expectations: Sequence[FabricExpectation],
                           fm: FabricManagerInfo | None) -> FabricFinding | None:
    """Fabric Manager installed here but not running, on a host with NVSwitch.

    Not installed at all is no finding: a fabric cannot complete without Fabric Manager, so
    it runs elsewhere (a VM's hypervisor or service VM, or a container the probe can't see);
    where the fabric is not complete, the registration finding already says so."""
    if fm is None or fm.running is not False or fm.installed is False:
        return None
    if not any(e.fabric_manager for e in expectations):
        return None
    return FabricFinding(
        Verdict.DEGRADED,
        "Fabric Manager not running on an NVSwitch host (" + (fm.how or "no process") + ")",
        "the fabric may still read COMPLETED, but no GPU can rejoin it after a reset or "
        "reboot; start nvidia-fabricmanager", "fabric_manager")


def judge_host_fabric(host: str, gpus: Mapping[int, GpuInfo],
                      ports_by_gpu: Mapping[int, Sequence[NvLinkPort]],
                      pairs: Sequence[PairJudgement] = (),
                      fabric_manager: FabricManagerInfo | None = None,
                      overrides: Mapping[str, int] | None = None,
                      had: Mapping[int, int] | None = None,
                      switches: Mapping[int, str] | None = None) -> HostFabricVerdict:
    """Every GPU's fabric verdict plus the host-level Fabric Manager check.
    `had`: GPU -> ports it has had (see `expect_gpu`); `switches`: GPU -> the NVSwitch
    whose fault explains its down ports (`switch_fold.folded_gpus`)."""
    verdicts = tuple(judge_gpu_fabric(g, info, ports_by_gpu.get(g, ()), pairs, overrides,
                                      (had or {}).get(g, 0), (switches or {}).get(g))
                     for g, info in sorted(gpus.items()))
    fm = fabric_manager_finding([v.expectation for v in verdicts], fabric_manager)
    host_findings = (fm,) if fm else ()
    bad = [v for v in verdicts if v.verdict is not Verdict.HEALTHY]
    verdict = max([Verdict.HEALTHY, *(v.verdict for v in bad),
                   *(f.verdict for f in host_findings)], key=SEVERITY.__getitem__)
    if verdict is Verdict.HEALTHY:
        kinds = sorted({v.expectation.basis for v in verdicts})
        reason = f"{host}: fabric as expected ({'; '.join(kinds) or 'no GPUs'})"
    else:
        parts = [f.text for f in host_findings] + [v.reason for v in bad]
        reason = f"{host}: " + " | ".join(parts)
    return HostFabricVerdict(verdict, reason, verdicts, host_findings)
