"""The narrow interface the NVML helpers read NVML through, owned by `nvml.py`.

`nvml.py` imports pynvml and holds the session (`Nvml`); the helpers (`nvlink.py`,
`nvml_clocks.py`, `nvml_fabric.py`, `nvml_health.py`) are handed that session and know it
only by this Protocol, so the imports run one way: nvml.py -> the helpers -> this module. As in
dcgm-exporter's nvmlprovider, one owner speaks to the library; the rest ask the owner.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class NvmlSession(Protocol):
    """A GPU's handle, one pynvml call with its errors converted, and field values."""

    module: Any  # the pynvml module (or a test's fake): its constants and structs

    def handle(self, gpu: int) -> Any: ...

    def call(self, where: str, name: str, *args: Any, per_link: bool = False) -> Any: ...

    def maybe(self, where: str, name: str, *args: Any, per_link: bool = False) -> Any: ...

    def fields(self, gpu: int, ids: Sequence[tuple[int, int]]) -> list[int | float | None]: ...

    def field_value(self, gpu: int, name: str, scope: int = 0) -> int: ...

    def link_count(self, gpu: int) -> int: ...

    def gpu_at(self, bus_id: str | None) -> int | None: ...

    def return_name(self, code: int) -> str: ...
