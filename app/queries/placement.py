"""Placement's input read from a host's stored state: inventory, GPU and pair verdicts, the
pair faults whose GPUs must not share a job, and per pair the evidence of its copy rate (the
stored newest uncontended value of each test and the newest sample of any kind), shaped for
`app.analysis.placement`."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from peerwatch.app.analysis.health import Sample
from peerwatch.app.analysis.pair_faults import stored_faults
from peerwatch.app.analysis.placement import FabricView, GpuState, PairVerdict
from peerwatch.app.analysis.placement_inputs import measured_matrix, view_from_inventory
from peerwatch.app.analysis.switch_fold import offerable
from peerwatch.app.records.health import HostHealth
from peerwatch.app.records.keys import PairKey
from peerwatch.probes.report import Inventory, TestName


def _evidence(health: HostHealth) -> dict[PairKey, list[Sample]]:
    """Per (pair, test): its newest judged value and, if newer, its newest sample."""
    out: dict[PairKey, list[Sample]] = {}
    for key, t in health.tests.items():
        rows = []
        if t.value is not None and t.value_at is not None:
            rows.append(Sample(at=t.value_at, value=t.value))
        if t.latest is not None and t.latest.at != t.value_at:
            rows.append(t.latest)
        out[key] = rows
    return out


def placement_view(health: HostHealth) -> tuple[FabricView, datetime | None]:
    """Placement's input from one host's stored verdicts, and when its newest evidence was
    measured."""
    fabric = health.fabric
    inventory = Inventory(gpus=[fabric.gpus[i] for i in sorted(fabric.gpus)],
                          nvlinks=fabric.nvlinks, pairs=list(fabric.pairs.values()))
    measured, newest = measured_matrix(_evidence(health))
    gpu_verdicts = {g.gpu: (offerable(g.verdict.value, g.fabric), g.reason)
                    for g in health.gpus}
    pairs = {(p.src, p.dst): PairVerdict(p.verdict.value, p.reason)
             for p in health.judgement.pairs}
    view = view_from_inventory(inventory, measured, gpu_verdicts, pairs)
    gone = [GpuState(g.gpu, False, g.reason) for g in health.gpus if g.gpu not in fabric.gpus]
    apart = sorted(stored_faults((s, d, f) for (s, d), f in health.pair_facts.items()))
    test, figures = measured_all_to_all(health)
    return replace(view, gpus=[*view.gpus, *gone], apart=apart, all_to_all=figures,
                   all_to_all_test=test), newest


def measured_all_to_all(health: HostHealth) -> tuple[str | None, dict[int, float]]:
    """Each GPU's newest judged all-to-all figure, of `a2a_nccl` where measured (what MoE
    frameworks run), else `a2a_ce`; 0 for a GPU whose newest run failed."""
    for test in (TestName.A2A_NCCL, TestName.A2A_CE):
        figures = {}
        for (src, dst, t), j in health.tests.items():
            if t is not test or src != dst:
                continue
            failed = j.latest is not None and j.latest.error is not None
            if failed or j.value is not None:
                figures[src] = 0.0 if failed else float(j.value or 0.0)
        if figures:
            return test.value, figures
    return None, {}
