"""The driver's own verdicts on a GPU, judged with what to do (probes/gpu_health.py). Pure.

The driver knows things about a GPU before any copy fails, and says what to do:

- a **recovery action** other than none (NVML's, linked to Xid 154) is the GPU's verdict:
  down, with the driver's words and its action. `drain_p2p` says the GPU's peer-to-peer
  fabric must not be used: the GPU is down, so the scheduler answer leaves it and every
  pair through it out, and the drain policy may take the node out;
- a **row remap failure** (no spare row left) or an **uncorrected ECC error** since the
  driver loaded (volatile count): down, "replace the GPU";
- a **pending row remap**: degraded, "reset the GPU when idle" (the remap takes effect at
  the next reset; until then the row's memory is at risk);
- **PCIe AER** counters of the GPU and its bridge, by their rate of increase as NVLink error
  counters are (app/analysis/rates.py, app/queries/counters.py): fatal growth is down,
  non-fatal growth degraded, correctable growth above `AER_CORRECTABLE_PER_S` degraded (a
  GPU with rising correctable AER errors is the GPU whose copies fail next).

Each finding has a `kind` (the label of its alert and of `peerwatch_gpu_driver_problem`), its
verdict, the driver's words and the action; `driver_facts` is what the GPU's judged row
keeps, so the alert rules and /metrics read them as judged and never judge again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from peerwatch.app.analysis.fabric_health import GpuJudgement
from peerwatch.app.analysis.text import fmt_rate
from peerwatch.app.analysis.verdict import SEVERITY, Verdict
from peerwatch.probes.gpu_health import GpuDriverHealth

AER_CORRECTABLE_PER_S = 0.01  # 36 an hour: a healthy link logs a handful a day, if any
AER_COLUMNS = {"correctable": "aer_correctable", "nonfatal": "aer_nonfatal",
               "fatal": "aer_fatal"}

# recovery action -> (what the driver says, what to do), nvidia-smi -q "GPU Recovery Action"
ACTIONS: dict[str, tuple[str, str]] = {
    "gpu_reset": ("GPU reset required",
                  "drain the GPU's jobs and reset it (nvidia-smi -r), then let peerwatch "
                  "sweep it"),
    "node_reboot": ("node reboot required", "drain the node and reboot it"),
    "drain_p2p": ("drain P2P: its peer-to-peer fabric must not be used",
                  "its pairs are left out of the scheduler answer; drain the node's "
                  "multi-GPU jobs, then reset the GPU or reboot as the Xid before it says"),
    "drain_and_reset": ("drain and reset", "drain the node, then reset the GPU"),
    "recover_imex_domain": ("recover the IMEX domain",
                            "restart nvidia-imex on every node of the domain, then sweep"),
    "bus_reset": ("PCIe bus reset required", "drain the node and reset the GPU's bus "
                                              "(reboot where that is the only way)"),
    "system_reboot": ("system reboot required", "drain the node and reboot it"),
}
REPLACE = "replace the GPU (open an RMA with nvidia-bug-report.sh attached)"
RESET_IDLE = "reset the GPU when idle (nvidia-smi -r), so the pending row remap takes effect"
AER_ACTION = ("check the GPU's PCIe seating, riser or cable and slot (lspci -vvv, the "
              "kernel log's AER lines); replace the part if the errors keep rising")


@dataclass(frozen=True)
class DriverFinding:
    kind: str  # recovery_action | row_remap_failure | ecc_uncorrected | row_remap_pending | aer
    verdict: Verdict
    words: str
    action: str

    def reason(self, gpu: int) -> str:
        return f"GPU{gpu} {self.words}: {self.action}"


def _recovery(health: GpuDriverHealth) -> list[DriverFinding]:
    action = health.recovery_action
    if action in (None, "none"):
        return []
    words, todo = ACTIONS.get(action, (f"recovery action {action}",
                                       "follow nvidia-smi -q's GPU Recovery Action"))
    return [DriverFinding("recovery_action", Verdict.DOWN,
                          f"driver recovery action {action.upper()} ({words})", todo)]


def _memory(health: GpuDriverHealth) -> list[DriverFinding]:
    out = []
    remap, ecc = health.row_remap, health.ecc
    if remap is not None and remap.failure:
        out.append(DriverFinding("row_remap_failure", Verdict.DOWN,
                                 "row remapping failed (no spare row left)", REPLACE))
    if ecc is not None and ecc.volatile_uncorrected:
        out.append(DriverFinding("ecc_uncorrected", Verdict.DOWN,
                                 f"{ecc.volatile_uncorrected} uncorrected ECC error(s) since "
                                 "the driver loaded", REPLACE))
    if remap is not None and remap.pending and not remap.failure:
        out.append(DriverFinding("row_remap_pending", Verdict.DEGRADED,
                                 f"row remap pending ({remap.corrected_rows} corrected, "
                                 f"{remap.uncorrected_rows} uncorrected rows remapped)",
                                 RESET_IDLE))
    return out


def _aer(rates: Mapping[str, float | None], error_per_s: float,
         correctable_per_s: float) -> list[DriverFinding]:
    limits = {"fatal": (error_per_s, Verdict.DOWN), "nonfatal": (error_per_s, Verdict.DEGRADED),
              "correctable": (correctable_per_s, Verdict.DEGRADED)}
    rising = [(kind, rate, verdict) for kind, (limit, verdict) in limits.items()
              if (rate := rates.get(kind)) is not None and rate > limit]
    if not rising:
        return []
    verdict = max((v for _, _, v in rising), key=SEVERITY.__getitem__)
    words = ", ".join(f"{kind} {fmt_rate(rate)}" for kind, rate, _ in rising)
    return [DriverFinding("aer", verdict, f"PCIe AER errors rising ({words}, the GPU and "
                                          "its bridge)", AER_ACTION)]


def driver_findings(health: GpuDriverHealth | None, aer_rates: Mapping[str, float | None],
                    error_per_s: float = 0.0,
                    correctable_per_s: float = AER_CORRECTABLE_PER_S) -> list[DriverFinding]:
    """Every finding of one GPU, worst first; `aer_rates`: AER kind -> growth per second."""
    found = [*(_recovery(health) + _memory(health) if health else []),
             *_aer(aer_rates, error_per_s, correctable_per_s)]
    return sorted(found, key=lambda f: -SEVERITY[f.verdict])


def with_driver_verdicts(gpus: Sequence[GpuJudgement],
                         findings: Mapping[int, Sequence[DriverFinding]]
                         ) -> list[GpuJudgement]:
    """Each GPU verdict made at least as bad as its worst driver finding, the findings'
    words first in its reason (a worse verdict it had stays, their words added)."""
    out = []
    for g in gpus:
        found = findings.get(g.gpu, ())
        if not found:
            out.append(g)
            continue
        words = "; ".join(f.reason(g.gpu) for f in found)
        worst = found[0].verdict
        if SEVERITY[worst] < SEVERITY[g.verdict]:
            out.append(replace(g, reason=f"{g.reason}; {words}"))
        else:
            keep = "" if g.verdict is Verdict.HEALTHY else f"; {g.reason}"
            out.append(replace(g, verdict=worst, reason=f"{words}{keep}"))
    return out


def driver_facts(findings: Sequence[DriverFinding]) -> dict[str, Any]:
    """What the GPU's judged row keeps (`facts["driver"]`): each finding's kind, verdict,
    words and action, for the alert rules, /metrics and the host page."""
    return {"findings": [{"kind": f.kind, "verdict": f.verdict.value, "words": f.words,
                          "action": f.action} for f in findings]}
