"""Proof before a return: a node peerwatch took out goes back only on complete evidence that
it is whole. Pure: values in, words out (None: proven).

- judged and heard from: a host never judged, or silent past the staleness limit, proves
  nothing;
- every GPU it is known to have is present: NVML lists as many as the most any source
  names (the server's GPU rows, the NVIDIA functions on the PCI bus, the GPUs the agent saw
  since boot, the scheduler's own count: Slurm's GRES, Kubernetes' `nvidia.com/gpu`);
- independent evidence of that count: the PCI bus, the seen-since-boot set or the
  scheduler's count, or a mark the server made itself (it knew the host's GPUs when it took
  the node out). An adopted node (a server that lost its state) has only what NVML lists
  now, which is no proof at all: a GPU absent from it is absent from the server's rows too;
- a full sweep (every GPU tested) judged after the take-out.

The scheduler's count also counts against a node in service (`count_fault`): a scheduler
that gives a node more GPUs than NVML lists sends jobs to a GPU that is not there.
"""

from __future__ import annotations

from datetime import datetime

from peerwatch.app.drain.facts import Mark, NodeFacts, SchedNode
from peerwatch.app.drain.policy import Fault, Policy

INDEPENDENT = ("pci", "seen_since_boot", "expected")
SOURCE_WORDS = {"inventory": "the server's GPU rows", "pci": "the PCI bus",
                "seen_since_boot": "the GPUs seen since boot", "scheduler": "the scheduler",
                "expected": "the host's expected count"}


def _at(t: datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S} UTC"


def shortfall(node: SchedNode, facts: NodeFacts) -> str | None:
    """"7 of 8 GPUs present (the PCI bus names 8)" when NVML lists fewer than any source."""
    counts = {k: v for k, v in facts.gpu_counts.items() if k != "nvml"}
    if node.gpus is not None:
        counts["scheduler"] = node.gpus
    present = facts.present_gpus
    short = {k: v for k, v in counts.items() if v > present}
    if not short:
        return None
    expected = max(short.values())
    names = ", ".join(f"{SOURCE_WORDS.get(k, k)} names {v}" for k, v in sorted(short.items()))
    return f"{present} of {expected} GPUs present ({names})"


def count_fault(policy: Policy, node: SchedNode, facts: NodeFacts) -> Fault | None:
    """The scheduler gives the node more GPUs than NVML lists (`take_out_on.gpu_missing`);
    since the host's verdict (the count is a state, not an event)."""
    if not policy.gpu_missing or node.gpus is None or facts.since is None:
        return None
    if node.gpus <= facts.present_gpus:
        return None
    return Fault("gpu_missing", f"GPU count: the scheduler gives {node.gpus}, NVML lists "
                                f"{facts.present_gpus}", facts.since)


def unproven(node: SchedNode, mark: Mark, facts: NodeFacts) -> str | None:
    """Why the node is not proven whole now; None when it is (its healthy wait may run)."""
    if facts.verdict is None:
        return "not judged yet"
    if facts.stale:
        return f"no recent reports: {facts.reason}"
    if (short := shortfall(node, facts)) is not None:
        return short
    independent = any(k in facts.gpu_counts for k in INDEPENDENT) or node.gpus is not None
    if not independent and mark.adopted:
        return ("adopted without a record and no evidence of its GPU count: the probe "
                "reports neither PCI functions nor GPUs seen since boot (upgrade it) and the "
                "scheduler gives no GPU count; resume it by hand once checked")
    return None


def sweep_pending(mark: Mark, facts: NodeFacts) -> str | None:
    """A return waits for a full sweep judged after the take-out."""
    if facts.full_sweep_at is not None and facts.full_sweep_at >= mark.taken_out_at:
        return None
    return f"waits for a full sweep judged after {_at(mark.taken_out_at)}"
