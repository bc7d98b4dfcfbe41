"""NVLink ports and their counters, read through the `Nvml` session (which owns pynvml).

What a read costs decides what is cached. Measured on the H200 pair: one per-link
nvmlDeviceGetFieldValues call takes ~10 ms whether it asks for 18 or 90 values, while
nvmlDeviceGetNvLinkErrorCounter takes ~0.6 ms a call (36 calls for two counters on 18 links).
The sweep reads counters just before and after every test, so:
- TX/RX data and the DL replay/recovery/CRC errors come from ONE field-values call per GPU,
  always fresh (TX is how the sweep tells the probe's bytes from a job's);
- CRC-data and ECC-data errors exist only behind nvmlDeviceGetNvLinkErrorCounter; they are
  lifetime counts judged by their rate over minutes, so a value up to ERROR_COUNTER_TTL_S old
  is reused instead of paying 22 ms twice per test;
- port descriptions (state, remote end, caps) are re-read on every `ports()` call, and a pair
  query reuses one read within PORTS_TTL_S so one inventory pass reads each GPU once.
"""

from __future__ import annotations

import time
from typing import Any

from peerwatch.probes.errors import NotSupported
from peerwatch.probes.nvidia.nvml_session import NvmlSession
from peerwatch.probes.report import LinkCounters, LinkState, NvLinkPort, RemoteType
from peerwatch.probes.topology import REMOTE_TYPES, as_text, normalize_bus_id, nvlink_version

PORTS_TTL_S = 2.0
ERROR_COUNTER_TTL_S = 10.0
# nvmlDeviceGetNvLinkErrorCounter counters that have no field id.
ERROR_COUNTERS = {"crc_data": 3, "ecc_data": 4}
NVLINK_CAPS = {
    "p2p_supported": 0, "sysmem_access": 1, "p2p_atomics": 2,
    "sysmem_atomics": 3, "sli_bridge": 4, "valid": 5,
}
COUNTER_FIELDS = ("THROUGHPUT_DATA_TX", "THROUGHPUT_DATA_RX",
                  "ERROR_DL_REPLAY", "ERROR_DL_RECOVERY", "ERROR_DL_CRC")


class NvLinks:
    def __init__(self, nvml: NvmlSession) -> None:
        self.nvml = nvml
        self._ports: dict[int, tuple[float, list[NvLinkPort]]] = {}
        self._errors: dict[int, tuple[float, list[dict[str, int | None]]]] = {}

    # ------------------------------------------------------------------ ports

    def ports(self, gpu: int, capabilities: bool = True) -> list[NvLinkPort]:
        """Every NVLink port NVML reports for the GPU (0 .. LINK_COUNT-1, never MAX_LINKS);
        without `capabilities` the six static capability calls per link are skipped."""
        h = self.nvml.handle(gpu)
        count = self.nvml.link_count(gpu)
        speeds = self._per_link_field(gpu, "NVML_FI_DEV_NVLINK_GET_SPEED", count)
        ports = [p for link in range(count)
                 if (p := self._port(gpu, h, link, speeds[link], capabilities))]
        self._ports[gpu] = (time.monotonic(), ports)
        return ports

    def recent_ports(self, gpu: int) -> list[NvLinkPort]:
        cached = self._ports.get(gpu)
        if cached and time.monotonic() - cached[0] < PORTS_TTL_S:
            return cached[1]
        return self.ports(gpu)

    def _per_link_field(self, gpu: int, name: str, count: int) -> list[int | float | None]:
        field_id = getattr(self.nvml.module, name, None)
        if field_id is None or count == 0:
            return [None] * count
        try:
            return self.nvml.fields(gpu, [(field_id, link) for link in range(count)])
        except NotSupported:
            return [None] * count

    def _port(self, gpu: int, h: Any, link: int, speed_mbps: Any,
              capabilities: bool = True) -> NvLinkPort | None:
        nv, where = self.nvml, f"nvml.nvlink gpu={gpu} link={link}"
        try:
            state = nv.call(where, "nvmlDeviceGetNvLinkState", h, link, per_link=True)
        except NotSupported:
            return None  # no such port on this GPU

        def ask(name: str, *args: Any) -> Any:
            return nv.maybe(where, name, h, link, *args, per_link=True)

        remote_type = ask("nvmlDeviceGetNvLinkRemoteDeviceType")
        remote = ask("nvmlDeviceGetNvLinkRemotePciInfo")
        remote_bus = None if remote is None else as_text(remote.busId)
        remote_norm = normalize_bus_id(remote_bus)
        caps = {cap: bool(v) for cap, code in NVLINK_CAPS.items() if capabilities
                and (v := ask("nvmlDeviceGetNvLinkCapability", code)) is not None}
        return NvLinkPort(
            gpu=gpu,
            link=link,
            state=LinkState.UP if int(state) == 1 else LinkState.DOWN,
            version=nvlink_version(ask("nvmlDeviceGetNvLinkVersion")),
            speed_bps=None if speed_mbps is None else float(speed_mbps) * 1e6,  # MB/s
            remote_type=(RemoteType.UNKNOWN if remote_type is None
                         else REMOTE_TYPES.get(int(remote_type), RemoteType.UNKNOWN)),
            remote_pci_bus_id=remote_bus if remote_norm else None,
            remote_gpu=nv.gpu_at(remote_norm),
            capabilities=caps,
        )

    # ------------------------------------------------------------------ counters

    def counters(self, gpu: int) -> list[LinkCounters]:
        """Cumulative per-link counters (see the module docstring for what is fresh)."""
        count = self.nvml.link_count(gpu)
        m = self.nvml.module
        ids = [getattr(m, f"NVML_FI_DEV_NVLINK_{n}", None) for n in COUNTER_FIELDS]
        wanted = [(fid, link) for link in range(count) for fid in ids if fid is not None]
        values = dict(zip(wanted, self.nvml.fields(gpu, wanted), strict=True)) if wanted else {}

        def get(fid: int | None, link: int) -> int | None:
            v = values.get((fid, link)) if fid is not None else None
            return None if v is None else int(v)

        errors = self._error_counters(gpu, count)
        out = []
        for link in range(count):
            tx, rx = get(ids[0], link), get(ids[1], link)
            out.append(LinkCounters(
                gpu=gpu, link=link,
                tx_bytes=None if tx is None else tx * 1024,  # NVML counts KiB
                rx_bytes=None if rx is None else rx * 1024,
                replay=get(ids[2], link), recovery=get(ids[3], link), crc_flit=get(ids[4], link),
                **errors[link],
            ))
        return out

    def _error_counters(self, gpu: int, count: int) -> list[dict[str, int | None]]:
        cached = self._errors.get(gpu)
        if cached and time.monotonic() - cached[0] < ERROR_COUNTER_TTL_S:
            return cached[1]
        h = self.nvml.handle(gpu)
        read = []
        for link in range(count):
            where = f"nvml.counters gpu={gpu} link={link}"
            row: dict[str, int | None] = {}
            for key, code in ERROR_COUNTERS.items():
                v = self.nvml.maybe(where, "nvmlDeviceGetNvLinkErrorCounter", h, link, code,
                                     per_link=True)
                row[key] = None if v is None else int(v)
            read.append(row)
        self._errors[gpu] = (time.monotonic(), read)
        return read
