"""What the GPU driver itself says about a GPU's health, as the probe read it (wire schema 4).

The driver keeps its own verdicts, and they come before anything peerwatch measures:

- the **recovery action** NVML reports per GPU (field `NVML_FI_DEV_GET_GPU_RECOVERY_ACTION`,
  nvml.h `nvmlDeviceGpuRecoveryAction_t`; linked to Xid 154): none, GPU reset, node reboot,
  **drain P2P** (this GPU's peer-to-peer fabric must not be used), drain and reset, recover
  the IMEX domain, bus reset, system reboot;
- **ECC** error counts, volatile (since the driver loaded) and aggregate (lifetime), corrected
  and uncorrected (`nvmlDeviceGetTotalEccErrors`);
- **row remapping** (A100 and later): rows remapped for corrected and uncorrected errors, a
  remap **pending** (takes effect at the next GPU reset) and a remap **failure** (no spare
  row left: the GPU is to be replaced) (`nvmlDeviceGetRemappedRows`);
- **retired pages** (pre-A100 GPUs: dynamic page retirement) where the GPU has them;
- **PCIe AER** counters of the GPU and its upstream bridge from sysfs (`aer_dev_correctable`,
  `aer_dev_nonfatal`, `aer_dev_fatal`): lifetime totals, judged by their rate;
- **IMEX** (the daemon that lets GPUs of an NVL72 domain map each other's memory): its state
  where it is installed; a host without it says "not present".

Each read stands alone. One the GPU does not offer is named in `unread` with its reason
("not supported: ..."), one that failed likewise ("failed: ..."): a GPU without row
remapping says so, and the other reads still go out. Every field is optional, so a probe
that cannot read one still reports the rest.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# nvmlDeviceGpuRecoveryAction_t, by value (NVML_GPU_RECOVERY_ACTION_*).
RECOVERY_ACTIONS: tuple[str, ...] = (
    "none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset",
    "recover_imex_domain", "bus_reset", "system_reboot",
)
# The reads a GPU's health is made of: the keys of `unread`.
READS: tuple[str, ...] = ("recovery_action", "ecc", "row_remap", "retired_pages")
AER_KINDS: tuple[str, ...] = ("correctable", "nonfatal", "fatal")

_Int = Annotated[int, Field(ge=0, le=2**63 - 1)]
_Reason = Annotated[str, Field(max_length=300)]
_Name = Annotated[str, Field(max_length=32)]
_Bdf = Annotated[str, Field(max_length=32)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def recovery_action_name(value: int) -> str:
    """NVML's recovery action value as its name; one a newer driver added as "action_N"."""
    return RECOVERY_ACTIONS[value] if 0 <= value < len(RECOVERY_ACTIONS) else f"action_{value}"


class EccCounts(_Model):
    """nvmlDeviceGetTotalEccErrors: volatile (since the driver loaded) and aggregate."""

    volatile_corrected: _Int | None = None
    volatile_uncorrected: _Int | None = None
    aggregate_corrected: _Int | None = None
    aggregate_uncorrected: _Int | None = None


class RowRemap(_Model):
    """nvmlDeviceGetRemappedRows: (corrected rows, uncorrected rows, pending, failure)."""

    corrected_rows: _Int = 0
    uncorrected_rows: _Int = 0
    pending: bool = False  # a remap waits for the next GPU reset
    failure: bool = False  # a remap failed: no spare row left


class RetiredPages(_Model):
    """Dynamic page retirement (GPUs before A100): pages retired per cause, and pending."""

    single_bit: _Int | None = None  # NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
    double_bit: _Int | None = None  # NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
    pending: bool | None = None  # nvmlDeviceGetRetiredPagesPendingStatus


class GpuDriverHealth(_Model):
    """One GPU's health as its driver says it (carried by `GpuInfo.driver`)."""

    recovery_action: _Name | None = None  # a RECOVERY_ACTIONS name
    ecc: EccCounts | None = None
    row_remap: RowRemap | None = None
    retired_pages: RetiredPages | None = None
    unread: dict[_Name, _Reason] = Field(default_factory=dict, max_length=16)


class AerCounts(_Model):
    """One PCI function's AER totals (the TOTAL_ERR_* line of each sysfs file)."""

    correctable: _Int | None = None
    nonfatal: _Int | None = None
    fatal: _Int | None = None


class PcieAer(_Model):
    """A GPU's PCIe AER counters and its upstream bridge's (`CounterSample.aer`)."""

    gpu: Annotated[int, Field(ge=0, lt=64)]
    device: AerCounts | None = None
    bridge: _Bdf | None = None  # the upstream bridge's BDF, e.g. "0000:17:00.0"
    bridge_counts: AerCounts | None = None
    unread: dict[_Name, _Reason] = Field(default_factory=dict, max_length=4)

    def total(self, kind: str) -> int | None:
        """`kind`'s count of the GPU and its bridge together; None where neither was read."""
        found = [getattr(c, kind) for c in (self.device, self.bridge_counts) if c is not None]
        known = [v for v in found if v is not None]
        return sum(known) if known else None


class ImexStatus(_Model):
    """The IMEX daemon of this host (`Inventory.imex`): `present` False where it is not
    installed (not an error); `state` what `nvidia-imex-ctl` answered ("READY", ...)."""

    present: bool
    running: bool | None = None  # an nvidia-imex process; None: could not look
    state: Annotated[str, Field(max_length=64)] | None = None
    how: Annotated[str, Field(max_length=300)] = ""
