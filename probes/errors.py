"""Errors the probe side raises. Backends convert library errors at their boundary.

    PeerwatchProbeError
    ├── FabricUnavailable     no driver / no GPUs / library missing: this backend cannot run here
    ├── NotSupported          the hardware or driver does not offer this query: treat as absent
    ├── GpuUnreachable        the GPU stopped answering (fell off the bus, Xid 79)
    ├── TransferError         a transfer test failed (CUDA error, verification failed)
    │   └── TransferTimeout   a transfer test did not finish within its watchdog
    └── BadProbeRequest       a caller asked for something that does not exist (GPU, test, preset)

Backends raise these `from` the original exception, so the cause stays in tracebacks.
"""

from __future__ import annotations


class PeerwatchProbeError(Exception):
    """Base of every error the probe side raises on purpose."""


class FabricUnavailable(PeerwatchProbeError):
    """This backend cannot run on this machine (no NVIDIA driver, no CUDA, no GPUs)."""


class NotSupported(PeerwatchProbeError):
    """The device does not support this query; the caller records the value as absent."""


class GpuUnreachable(PeerwatchProbeError):
    """The GPU stopped answering (NVML_ERROR_GPU_IS_LOST): it fell off the bus; the probe
    leaves it out of the inventory and the server pages about the GPU it no longer sees."""


class TransferError(PeerwatchProbeError):
    """A transfer test failed on one pair; the sweep records it and goes on."""


class TransferTimeout(TransferError):
    """A transfer test hung and was abandoned by the watchdog."""


class BadProbeRequest(PeerwatchProbeError, ValueError):
    """Unknown preset, test or GPU index: the caller's mistake, reported in one line."""
