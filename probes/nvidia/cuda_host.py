"""What a transfer test's parts use of `Transfers`, the owner of CuPy (`transfers.py`).

`transfer_run.py` (a test's buffers, hold and timing) and `gpu_copies.py` (the per-GPU
tests) are handed the `Transfers` object and know it only by this Protocol, so the imports
run one way: transfers.py -> gpu_copies.py -> transfer_run.py -> this module, and only
transfers.py imports cupy.
"""

from __future__ import annotations

from typing import Any, Protocol

# cudaMemcpyKind
MEMCPY_HOST_TO_DEVICE, MEMCPY_DEVICE_TO_HOST, MEMCPY_DEVICE_TO_DEVICE = 1, 2, 3


class CudaHost(Protocol):
    """CuPy, numpy and the CUDA runtime, plus the per-device plumbing and the hold's counter."""

    cp: Any  # the cupy module
    rt: Any  # cupy.cuda.runtime
    timeout_s: float  # a test that does not finish within it raises TransferTimeout
    local_cpus: dict[int, frozenset[int]]  # each device's local CPUs (NVML's affinity)
    flag: Any  # the pinned counter spin kernels wait on ...
    flag_ptr: int  # ... its device-visible address ...
    ticket: int  # ... and the value that releases the current test

    @property
    def np(self) -> Any:  # the numpy module (read here, set by the owner)
        ...

    def device(self, index: int) -> Any: ...

    def stream(self, device: int) -> Any: ...

    def kernel(self, device: int, name: str) -> Any: ...

    def sm_count(self, device: int) -> int: ...
