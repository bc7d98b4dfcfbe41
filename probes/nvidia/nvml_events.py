"""NVML's critical-Xid events: registered on every GPU, waited for on a thread of their own.

It reads NVML through the `Nvml` session's module (the seam: this module never imports
pynvml). Why a thread with a timeout: `nvmlEventSetWait_v2` blocks until an event or its
timeout, and the agent must stop at once and never die of it. A timeout is the normal
answer (measured on the H200 machine: NVMLError_Timeout after 1.00 s with nothing to say);
any other error is logged once, waited out with a growing pause, and the wait goes on. A GPU
whose registration fails (an old GPU, a vGPU) is left out with a warning; the rest still
report.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from peerwatch.probes.nvidia.nvml import Nvml

log = logging.getLogger(__name__)

XID_CRITICAL = 0x8  # nvmlEventTypeXidCriticalError
WAIT_MS = 1000
MAX_PAUSE_S = 60.0


@dataclass(frozen=True)
class NvmlXid:
    gpu: int | None  # NVML index; None when the handle could not be named
    code: int  # the Xid number (eventData)


class NvmlEvents:
    """Register, then `start()` a waiting thread calling `on_xid` per event; `close()`."""

    def __init__(self, nvml: Nvml, on_xid: Callable[[NvmlXid], None],
                 wait_ms: int = WAIT_MS) -> None:
        self.nvml = nvml
        self.module = nvml.module
        self.on_xid = on_xid
        self.wait_ms = wait_ms
        self.stop = threading.Event()
        self.registered: list[int] = []
        self.problems: list[str] = []
        self.timeouts = 0
        self._thread: threading.Thread | None = None
        self._set = self.nvml.call("nvml.events", "nvmlEventSetCreate")
        for gpu in range(nvml.gpu_count()):
            self._register(gpu)

    def _register(self, gpu: int) -> None:
        handle = self.nvml.handle(gpu)
        try:
            supported = int(self.nvml.call(f"nvml.events gpu={gpu}",
                                           "nvmlDeviceGetSupportedEventTypes", handle))
            if not supported & XID_CRITICAL:
                raise RuntimeError("the GPU offers no critical-Xid event")
            self.nvml.call(f"nvml.events gpu={gpu}", "nvmlDeviceRegisterEvents", handle,
                           XID_CRITICAL, self._set)
        except Exception as exc:  # noqa: BLE001 - one GPU's registration never stops the rest
            self.problems.append(f"GPU{gpu}: {exc}")
            log.warning("NVML events: GPU%d not registered (%s); its Xids come from the "
                        "kernel log only", gpu, exc)
            return
        self.registered.append(gpu)

    def start(self) -> NvmlEvents:
        self._thread = threading.Thread(target=self._run, name="peerwatch-nvml-events",
                                        daemon=True)
        self._thread.start()
        return self

    def wait_once(self) -> NvmlXid | None:
        """One wait: the event, or None on the timeout. Other NVML errors raise NVMLError."""
        timeout = getattr(self.module, "NVML_ERROR_TIMEOUT", 10)
        try:
            data = self.module.nvmlEventSetWait_v2(self._set, self.wait_ms)
        except self.module.NVMLError as exc:
            if getattr(exc, "value", None) == timeout:
                self.timeouts += 1
                return None
            raise
        return NvmlXid(self._index(data.device), int(data.eventData))

    def _index(self, handle: Any) -> int | None:
        try:
            return int(self.module.nvmlDeviceGetIndex(handle))
        except self.module.NVMLError:
            return None

    def _run(self) -> None:
        pause = 1.0
        while not self.stop.is_set():
            try:
                event = self.wait_once()
            except Exception as exc:  # noqa: BLE001 - the agent outlives its event thread's errors
                log.warning("NVML event wait failed (%s); trying again in %.0f s", exc, pause)
                self.stop.wait(pause)
                pause = min(MAX_PAUSE_S, pause * 2)
                continue
            pause = 1.0
            if event is not None:
                try:
                    self.on_xid(event)
                except Exception:  # noqa: BLE001
                    log.exception("handling NVML Xid %s failed", event)

    def close(self) -> None:
        self.stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5 + self.wait_ms / 1000)
        try:
            self.module.nvmlEventSetFree(self._set)
        except self.module.NVMLError:
            pass  # freed with the session anyway
