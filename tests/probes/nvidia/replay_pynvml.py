"""A stand-in for `pynvml` that answers exactly what a recorded host answered, and a sysfs
tree rebuilt from the same recording (bench/gpu/driver_health.py writes the format).

`ReplayPynvml(fixture)` answers each nvml* call with the recorded value or raises the
recorded NVMLError; a function the recording never saw called is absent (as in older
bindings: the probe calls that "not supported"), and a call with arguments it never saw
fails the test loudly. `sysfs_tree(fixture, root)` lays out each GPU's PCI path under
root/sys/devices with the recorded AER files, and links root/sys/bus/pci/devices/<BDF>.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "driver_health"


class NVMLError(Exception):
    def __init__(self, value: int, text: str = "") -> None:
        super().__init__(text or f"NVML error {value}")
        self.value = value


class Handle:
    def __init__(self, gpu: int) -> None:
        self.gpu = gpu


def _namespace(value: Any) -> Any:
    if isinstance(value, dict):
        return SimpleNamespace(**{k: _namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_namespace(v) for v in value]
    return value


def _key(name: str, args: Any) -> str:
    return json.dumps([name, args], sort_keys=True)


class ReplayPynvml:
    def __init__(self, fixture: dict[str, Any]) -> None:
        self.NVMLError = NVMLError
        for name, value in fixture["constants"].items():
            setattr(self, name, value)
        self._calls = {_key(c["fn"], c["args"]): c for c in fixture["nvml_calls"]}
        self._functions = {c["fn"] for c in fixture["nvml_calls"]}

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("nvml") or name not in self._functions:
            raise AttributeError(name)
        return lambda *args: self._answer(name, args)

    @staticmethod
    def _arg(value: Any) -> Any:
        if isinstance(value, Handle):
            return {"gpu": value.gpu}
        if isinstance(value, list | tuple):
            return [ReplayPynvml._arg(v) for v in value]
        return value

    def _answer(self, name: str, args: tuple[Any, ...]) -> Any:
        key = _key(name, [self._arg(a) for a in args])
        if key not in self._calls:
            raise AssertionError(f"the recording has no answer to {key}")
        entry = self._calls[key]
        if entry.get("error") is not None:
            raise NVMLError(entry["error"], entry.get("error_text", ""))
        value = entry["value"]
        if name == "nvmlDeviceGetHandleByIndex":
            return Handle(value["handle"])
        return _namespace(value)


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def sysfs_tree(fixture: dict[str, Any], root: Path) -> Path:
    """The recorded GPUs' sysfs, as far as the AER reads look: their PCI paths, the AER
    files of each GPU and its bridge (an unreadable one left out), the bus links."""
    links = root / "sys/bus/pci/devices"
    links.mkdir(parents=True)
    for gpu in fixture["gpus"]:
        path = gpu["pci_path"]
        if not path:
            continue
        device = root / "sys/devices" / Path(*path)
        device.mkdir(parents=True, exist_ok=True)
        for name, texts in gpu["sysfs"].items():
            where = device if name == path[-1] else device.parent
            assert where.name == name, (name, path)
            for file, text in texts.items():
                if text is not None:
                    (where / file).write_text(text)
        (links / path[-1]).symlink_to(device)
    return root
