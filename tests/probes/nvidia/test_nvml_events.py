"""NVML's critical-Xid events through the very code the agent runs (`nvml_events.py`), on the
hand-written pynvml of a real machine's dump extended with the event calls: every GPU
registered with the mask the H200 machine offered (65439), a timeout the normal answer, an
event delivered with its GPU, and a failing wait never ending the waiting thread."""

from __future__ import annotations

import queue
from types import SimpleNamespace
from typing import Any

from peerwatch.probes.agent.events import EventCollector
from peerwatch.probes.nvidia.nvml import Nvml
from peerwatch.probes.nvidia.nvml_events import XID_CRITICAL, NvmlEvents, NvmlXid
from peerwatch.probes.report import EventSource, utcnow
from tests.conftest import eventually
from tests.probes.fake_pynvml import NVML_ERROR_UNKNOWN, FakePynvml, NVMLError

NVML_ERROR_TIMEOUT = 10
H200_SUPPORTED_EVENTS = 65439  # nvmlDeviceGetSupportedEventTypes on the one-H200 machine


class EventfulPynvml(FakePynvml):
    """The dump's pynvml plus nvmlEventSet*: waits answer from a queue (a code raises it)."""

    NVML_ERROR_TIMEOUT = NVML_ERROR_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.registered: list[tuple[int, int]] = []
        self.answers: queue.Queue[Any] = queue.Queue()

    def nvmlEventSetCreate(self) -> str:
        return "set"

    def nvmlDeviceGetSupportedEventTypes(self, h: Any) -> int:
        return H200_SUPPORTED_EVENTS

    def nvmlDeviceRegisterEvents(self, h: Any, mask: int, event_set: str) -> None:
        self.registered.append((h.index, mask))

    def nvmlEventSetWait_v2(self, event_set: str, timeout_ms: int) -> Any:
        try:
            answer = self.answers.get(timeout=timeout_ms / 1000)
        except queue.Empty:
            raise NVMLError(NVML_ERROR_TIMEOUT) from None
        if isinstance(answer, int):
            raise NVMLError(answer)
        return answer

    def nvmlDeviceGetIndex(self, h: Any) -> int:
        return int(h.index)

    def nvmlEventSetFree(self, event_set: str) -> None:
        self.calls.append("nvmlEventSetFree")


def _xid(module: EventfulPynvml, gpu: int, code: int) -> Any:
    return SimpleNamespace(device=module.nvmlDeviceGetHandleByIndex(gpu),
                           eventType=XID_CRITICAL, eventData=code)


def test_every_gpu_registers_and_a_wait_times_out_cleanly() -> None:
    module = EventfulPynvml.from_dump()
    nvml = Nvml(module=module)
    events = NvmlEvents(nvml, lambda xid: None, wait_ms=10)
    assert events.registered == [0, 1] and module.registered == [(0, 8), (1, 8)]
    assert events.wait_once() is None and events.timeouts == 1
    module.answers.put(_xid(module, 1, 79))
    assert events.wait_once() == NvmlXid(gpu=1, code=79)
    events.close()
    assert "nvmlEventSetFree" in module.calls
    nvml.close()


def test_the_waiting_thread_outlives_a_failing_wait_and_feeds_the_collector() -> None:
    module = EventfulPynvml.from_dump()
    nvml = Nvml(module=module)
    collector = EventCollector()
    events = NvmlEvents(nvml, collector.on_nvml, wait_ms=10).start()
    try:
        module.answers.put(NVML_ERROR_UNKNOWN)  # logged, waited out (1 s), the wait goes on
        module.answers.put(_xid(module, 0, 74))
        got: list = []
        eventually(lambda: got.extend(collector.take(utcnow())) or got)
        assert [(e.code, e.gpu, e.sources) for e in got] == [(74, 0, [EventSource.NVML])]
        assert events._thread is not None and events._thread.is_alive()
    finally:
        events.close()
        nvml.close()
    assert not events._thread.is_alive()
