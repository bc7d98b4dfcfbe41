"""A hand-written stand-in for the `pynvml` module, answering from a real machine's NVML dump.

`FakePynvml.from_dump(path)` replays tests/fixtures/h200x2/nvml.json (2 x H200 on NVSwitch):
every value it returns was read on that machine, and every query NVML refused there (NUMA node,
links 18..35, ECC_COUNT ...) raises the same NVMLError here. Two answers are not in the dump and
come from ../shared/REFERENCE.md instead: P2P READ (the dump hit the bindings' tuple bug; the
status is OK) and the NVSwitch fabric info (the dump called the old API wrongly; the state is
COMPLETED). `v_segfaults=True` with `legacy_fabric={"state": 0}` is the one-H200 machine of
REFERENCE.md section 6: its V call raises `Segfault`, which nothing in the probe catches.
`direct_attached(...)` rewires the same GPUs as a board without switches.

It is shaped like pynvml where probes/nvidia/nvml.py touches it: same function names, constants,
NVMLError classes carrying `.value`, field-value entries with `nvmlReturn`/`valueType`/`value`,
and `byref` (pynvml re-exports ctypes; here it passes the struct through).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "h200x2" / "nvml.json"

# Constants as nvidia-ml-py defines them (tests check they match the real module).
NVML_SUCCESS = 0
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_UNKNOWN = 999
NVML_FI_DEV_NVLINK_LINK_COUNT = 91
NVML_FI_DEV_PCIE_REPLAY_COUNTER = 94
NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138
NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139
NVML_FI_DEV_NVSWITCH_CONNECTED_LINK_COUNT = 147
NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY = 161
NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY = 162
NVML_FI_DEV_NVLINK_ERROR_DL_CRC = 163
NVML_FI_DEV_NVLINK_GET_SPEED = 164
NVML_FI_DEV_NVLINK_GET_STATE = 165
NVML_FI_DEV_NVLINK_GET_VERSION = 166
NVML_NVLINK_MAX_LINKS = 36
NVML_P2P_CAPS_INDEX_READ = (0,)  # the bindings' bug, kept on purpose
NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3
NVML_AFFINITY_SCOPE_NODE = 0
NVML_CLOCK_SM = 1
NVML_TEMPERATURE_GPU = 0
NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1
NVML_PERF_POLICY_POWER = 0
NVML_PERF_POLICY_THERMAL = 1
# The one-H200 machine's clocks (/work/notes/device_discovery.txt, driver 580.159.04): idle.
H200_IDLE_CLOCKS = {"reasons": 1, "supported": 511, "sm": 345, "sm_max": 1980,
                    "power_mw": 78250, "power_limit_mw": 700000, "temp": 37, "slowdown": 89,
                    "violation": {0: (1796172023032845, 0), 1: (1796172023034480, 0)}}

_ERROR_NAMES = {
    NVML_ERROR_INVALID_ARGUMENT: "InvalidArgument",
    NVML_ERROR_NOT_SUPPORTED: "NotSupported",
    NVML_ERROR_DRIVER_NOT_LOADED: "DriverNotLoaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "LibraryNotFound",
    NVML_ERROR_FUNCTION_NOT_FOUND: "FunctionNotFound",
    NVML_ERROR_GPU_IS_LOST: "GpuIsLost",
    NVML_ERROR_UNKNOWN: "Unknown",
}
_CODES = {name: code for code, name in _ERROR_NAMES.items()}
_FIELD_NAMES = {v: k for k, v in dict(globals()).items() if k.startswith("NVML_FI_DEV_")}
_P2P_NAMES = {0: "READ", 1: "WRITE", 2: "NVLINK", 3: "ATOMICS", 4: "PCI"}
_CAP_NAMES = {0: "P2P_SUPPORTED", 1: "SYSMEM_ACCESS", 2: "P2P_ATOMICS", 3: "SYSMEM_ATOMICS",
              4: "SLI_BRIDGE", 5: "VALID"}
_ERROR_COUNTERS = {0: "REPLAY", 1: "RECOVERY", 2: "CRC_FLIT", 3: "CRC_DATA", 4: "ECC_DATA"}
NO_PCI = "FFFFFFFF:FF:FF.0"


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return _ERROR_NAMES.get(self.value, f"NVML error {self.value}")


def _error_class(name: str) -> type[NVMLError]:
    return type(f"NVMLError_{name}", (NVMLError,), {})


NVMLError_NotSupported = _error_class("NotSupported")
NVMLError_InvalidArgument = _error_class("InvalidArgument")
NVMLError_LibraryNotFound = _error_class("LibraryNotFound")
NVMLError_DriverNotLoaded = _error_class("DriverNotLoaded")
NVMLError_FunctionNotFound = _error_class("FunctionNotFound")
NVMLError_GpuIsLost = _error_class("GpuIsLost")
_CLASSES = {cls.__name__: cls for cls in (
    NVMLError_NotSupported, NVMLError_InvalidArgument, NVMLError_LibraryNotFound,
    NVMLError_DriverNotLoaded, NVMLError_FunctionNotFound, NVMLError_GpuIsLost)}


def _raise(code: int) -> None:
    cls = _CLASSES.get(f"NVMLError_{_ERROR_NAMES.get(code, '')}", NVMLError)
    raise cls(code)


def _answer(value: Any) -> Any:
    """Dump values "ERR:NVMLError_X:..." raise that error; others are returned."""
    if isinstance(value, str) and value.startswith("ERR:NVMLError_"):
        _raise(_CODES[value.split(":")[1].removeprefix("NVMLError_")])
    return value


class c_nvmlGpuFabricInfo_t:  # noqa: N801 - pynvml's name (the legacy struct: no health)
    def __init__(self) -> None:
        self.clusterUuid = bytes(16)
        self.status = self.cliqueId = self.state = 0


class c_nvmlGpuFabricInfo_v2_t(c_nvmlGpuFabricInfo_t):  # noqa: N801
    def __init__(self) -> None:
        super().__init__()
        self.version = 0x2000024
        self.healthMask = 0


class c_nvmlGpuFabricInfo_v3_t(c_nvmlGpuFabricInfo_v2_t):  # noqa: N801
    def __init__(self) -> None:
        super().__init__()
        self.version = 0x3000028
        self.healthSummary = 0


class Segfault(BaseException):  # noqa: N818 - stands for a signal, not an error
    """What nvmlDeviceGetGpuFabricInfoV did on the one-H200 machine (SIGSEGV). A BaseException,
    so no `except Exception` in the probe can swallow it: a test sees it if V is ever called."""


LEGACY_KEYS = ("state", "status", "cliqueId", "clusterUuid")
SAME = "same"


class FakePynvml:
    """One fake NVML 'library'. Attributes mirror pynvml's module-level names."""

    NVMLError = NVMLError

    def __init__(self, dump: dict[str, Any], *, init_error: int | None = None,
                 fabric: dict[str, Any] | None = None, legacy_fabric: Any = SAME,
                 v_segfaults: bool = False, has_legacy: bool = True) -> None:
        self.dump = dump
        self.devices: list[dict[str, Any]] = dump["devices"]
        self.init_error = init_error
        self.fabric = fabric  # what the V call answers; None: NotSupported
        # What the legacy call answers: SAME = the V answer's legacy fields, None: NotSupported,
        # or a dict ({"state": 0} is the one-H200 machine's answer).
        self.legacy_fabric = legacy_fabric
        self.v_segfaults = v_segfaults
        self.initialized = False
        self.calls: list[str] = []
        self.tx_kib = {
            (d["index"], link): v
            for d in self.devices
            for link, v in enumerate(d["fields_per_link"]["NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX"])
        }
        for name, value in globals().items():
            if name.startswith(("NVML_", "NVMLError_", "c_nvmlGpuFabricInfo")):
                setattr(self, name, value)
        if not has_legacy:  # bindings without the old call: it is simply not there
            del self.c_nvmlGpuFabricInfo_t
            self.nvmlDeviceGetGpuFabricInfo = None

    @classmethod
    def from_dump(cls, path: Path = FIXTURE, **kwargs: Any) -> FakePynvml:
        fabric = {"state": 3, "status": 0, "cliqueId": 32766, "healthSummary": 1,
                  "clusterUuid": bytes(range(1, 17))}
        kwargs.setdefault("fabric", fabric)
        return cls(json.loads(path.read_text()), **kwargs)

    def direct_attached(self, links_to_peer: int) -> FakePynvml:
        """The same two GPUs wired to each other directly: the first `links_to_peer` links of
        each GPU name the peer's PCI id and are up, the rest are down; no fabric."""
        dump = copy.deepcopy(self.dump)
        bus = [d["pci"]["busId"] for d in dump["devices"]]
        for d in dump["devices"]:
            peer = bus[1 - d["index"]]
            for port in d["links"]:
                if not isinstance(port["state"], int):
                    continue
                up = port["link"] < links_to_peer
                port["state"] = int(up)
                port["remote_type"] = 0
                port["remote_pci"] = {"busId": peer if up else NO_PCI}
        return FakePynvml(dump, fabric=None)

    # ------------------------------------------------------------------ helpers

    def byref(self, obj: Any) -> Any:
        return obj

    def _dev(self, handle: Any) -> dict[str, Any]:
        return self.devices[handle.index]

    def _link(self, handle: Any, link: int) -> dict[str, Any]:
        ports = self._dev(handle)["links"]
        if not 0 <= link < len(ports):
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        port = ports[link]
        _answer(port["state"])
        return port

    def add_traffic(self, gpu: int, nbytes: int) -> None:
        """Bytes sent out of `gpu`, spread over its links like the real counters show."""
        links = [k for k in self.tx_kib if k[0] == gpu]
        for key in links:
            self.tx_kib[key] += nbytes // 1024 // len(links)

    # ------------------------------------------------------------------ library

    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        if self.init_error is not None:
            _raise(self.init_error)
        self.initialized = True

    def nvmlShutdown(self) -> None:
        self.calls.append("nvmlShutdown")
        self.initialized = False

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(self.dump["driver"])

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return int(self.dump["cuda_driver"])

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:
        if not 0 <= index < len(self.devices):
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        return SimpleNamespace(index=index)

    # ------------------------------------------------------------------ device

    def nvmlDeviceGetPciInfo(self, h: Any) -> Any:
        return SimpleNamespace(busId=self._dev(h)["pci"]["busId"].encode())

    def nvmlDeviceGetName(self, h: Any) -> str:
        return str(self._dev(h)["name"])

    def nvmlDeviceGetUUID(self, h: Any) -> str:
        return str(self._dev(h)["uuid"])

    def nvmlDeviceGetMemoryInfo(self, h: Any) -> Any:
        return SimpleNamespace(**self._dev(h)["mem"])

    def nvmlDeviceGetCpuAffinity(self, h: Any, words: int) -> list[int]:
        # The dump kept only the array's repr; nvidia-smi topo -m printed "0-31" for both GPUs.
        return [0xFFFFFFFF] + [0] * (words - 1)

    def nvmlDeviceGetMemoryAffinity(self, h: Any, words: int, scope: int) -> list[int]:
        # Not in the dump; nvidia-smi topo -m printed "NUMA Affinity 0" for both GPUs.
        return [0b1] + [0] * (words - 1)

    def nvmlDeviceGetNumaNodeId(self, h: Any) -> int:
        return int(_answer(self._dev(h)["numa"]))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: Any) -> int:
        return int(self._dev(h)["pcie_gen"][0])

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: Any) -> int:
        return int(self._dev(h)["pcie_gen"][1])

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: Any) -> int:
        return int(self._dev(h)["pcie_width"][0])

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: Any) -> int:
        return int(self._dev(h)["pcie_width"][1])

    def nvmlDeviceGetPcieReplayCounter(self, h: Any) -> int:
        return int(self._dev(h)["pcie_replay"])

    def nvmlDeviceGetUtilizationRates(self, h: Any) -> Any:
        return SimpleNamespace(**self._dev(h)["util"])

    def nvmlDeviceGetComputeRunningProcesses(self, h: Any) -> list[Any]:
        return list(self._dev(h)["procs"])

    def nvmlDeviceGetGpuFabricInfoV(self, h: Any, info: Any) -> int:
        self.calls.append("nvmlDeviceGetGpuFabricInfoV")
        if self.v_segfaults:
            raise Segfault("nvmlDeviceGetGpuFabricInfoV: SIGSEGV (the process would be dead)")
        if self.fabric is None:
            _raise(NVML_ERROR_NOT_SUPPORTED)
        for key, value in self.fabric.items():
            if hasattr(info, key):
                setattr(info, key, value)
        return NVML_SUCCESS

    def nvmlDeviceGetGpuFabricInfo(self, h: Any, info: Any) -> int:
        self.calls.append("nvmlDeviceGetGpuFabricInfo")
        answer = self.fabric if self.legacy_fabric == SAME else self.legacy_fabric
        if answer is None:
            _raise(NVML_ERROR_NOT_SUPPORTED)
        for key in LEGACY_KEYS:
            if key in answer:
                setattr(info, key, answer[key])
        return NVML_SUCCESS

    def nvmlDeviceGetTopologyCommonAncestor(self, h1: Any, h2: Any) -> int:
        return int(self._dev(h1)["topo"][str(h2.index)])

    def nvmlDeviceGetP2PStatus(self, h1: Any, h2: Any, index: int) -> int:
        if not isinstance(index, int):  # what ctypes does with the tuple READ constant
            raise TypeError("argument 3: TypeError: Don't know how to convert parameter 3")
        if index == 0:
            return 0  # READ: OK on the H200 pair (REFERENCE.md); the dump hit the tuple bug
        statuses = self._dev(h1)["p2p"][str(h2.index)]
        return int(_answer(statuses[f"NVML_P2P_CAPS_INDEX_{_P2P_NAMES[index]}"]))

    def nvmlDeviceGetFieldValues(self, h: Any, ids: list[tuple[int, int]]) -> list[Any]:
        self.calls.append("nvmlDeviceGetFieldValues")
        return [self._field_entry(h, fid, scope) for fid, scope in ids]

    def _field_entry(self, h: Any, fid: int, scope: int) -> Any:
        dev, name = self._dev(h), _FIELD_NAMES.get(fid, "")
        per_link = dev["fields_per_link"].get(name)
        ret, value = NVML_ERROR_NOT_SUPPORTED, 0
        if fid == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
            ret, value = NVML_SUCCESS, self.tx_kib.get((h.index, scope), 0)
        elif per_link is not None:
            if scope < len(per_link):
                ret, value = NVML_SUCCESS, per_link[scope]
            else:
                ret = NVML_ERROR_INVALID_ARGUMENT
        elif scope == 0 and isinstance(dev["fields"].get(name), int):
            ret, value = NVML_SUCCESS, dev["fields"][name]
        return SimpleNamespace(fieldId=fid, scopeId=scope, nvmlReturn=ret,
                               valueType=NVML_VALUE_TYPE_UNSIGNED_LONG_LONG,
                               value=SimpleNamespace(ullVal=value))

    # ------------------------------------------------------------------ NVLink

    def nvmlDeviceGetNvLinkState(self, h: Any, link: int) -> int:
        return int(self._link(h, link)["state"])

    def nvmlDeviceGetNvLinkVersion(self, h: Any, link: int) -> int:
        return int(_answer(self._link(h, link)["version"]))

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h: Any, link: int) -> int:
        return int(_answer(self._link(h, link)["remote_type"]))

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h: Any, link: int) -> Any:
        return SimpleNamespace(busId=self._link(h, link)["remote_pci"]["busId"].encode())

    def nvmlDeviceGetNvLinkCapability(self, h: Any, link: int, cap: int) -> int:
        caps = self._link(h, link)["caps"]
        return int(_answer(caps[f"NVML_NVLINK_CAP_{_CAP_NAMES[cap]}"]))

    def nvmlDeviceGetNvLinkErrorCounter(self, h: Any, link: int, counter: int) -> int:
        errors = self._link(h, link)["errors"]
        return int(_answer(errors[f"NVML_NVLINK_ERROR_DL_{_ERROR_COUNTERS[counter]}"]))

    # ------------------------------------------------------------------ clocks
    # Answered from a device's "clocks" entry (H200_IDLE_CLOCKS' shape); a device without
    # one answers NotSupported, as a GPU whose NVML lacks the query does.

    def _clocks(self, h: Any) -> dict[str, Any]:
        clocks = self._dev(h).get("clocks")
        if clocks is None:
            _raise(NVML_ERROR_NOT_SUPPORTED)
        return clocks

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: Any) -> int:
        return int(self._clocks(h)["reasons"])

    def nvmlDeviceGetSupportedClocksEventReasons(self, h: Any) -> int:
        return int(self._clocks(h)["supported"])

    def nvmlDeviceGetClockInfo(self, h: Any, clock: int) -> int:
        if clock != NVML_CLOCK_SM:
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        return int(self._clocks(h)["sm"])

    def nvmlDeviceGetMaxClockInfo(self, h: Any, clock: int) -> int:
        if clock != NVML_CLOCK_SM:
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        return int(self._clocks(h)["sm_max"])

    def nvmlDeviceGetPowerUsage(self, h: Any) -> int:
        return int(self._clocks(h)["power_mw"])

    def nvmlDeviceGetEnforcedPowerLimit(self, h: Any) -> int:
        return int(self._clocks(h)["power_limit_mw"])

    def nvmlDeviceGetTemperature(self, h: Any, sensor: int) -> int:
        if sensor != NVML_TEMPERATURE_GPU:
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        return int(self._clocks(h)["temp"])

    def nvmlDeviceGetTemperatureThreshold(self, h: Any, threshold: int) -> int:
        if threshold != NVML_TEMPERATURE_THRESHOLD_SLOWDOWN:
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        return int(self._clocks(h)["slowdown"])

    def nvmlDeviceGetViolationStatus(self, h: Any, policy: int) -> Any:
        found = self._clocks(h)["violation"].get(policy)
        if found is None:
            _raise(NVML_ERROR_NOT_SUPPORTED)
        return SimpleNamespace(referenceTime=found[0], violationTime=found[1])
