"""Every RDMA device and port (InfiniBand and RoCE) of the host, from sysfs.

/sys/class/infiniband/<dev>/ names the device (`hca_type`, `fw_ver`, `board_id`) and links
to its PCI function (`device`); ports/<n>/ holds `state` ("4: ACTIVE"), `phys_state`
("5: LinkUp"), `rate` ("400 Gb/sec (4X NDR)"), `link_layer` (InfiniBand or Ethernet: RoCE),
`counters/` (the PortCounters every device keeps; probes/nics.py says what each counts) and
the optional `hw_counters/` (the driver's own). The kernel's
Documentation/ABI/stable/sysfs-class-infiniband describes them.

Each read fails on its own, named in `unread`: a file the device does not have, or one
reading "N/A (no PMA)" (iWARP, some RoCE devices: no Performance Management Agent) is
"not supported: ...", any other error "failed: ...". The path level from each GPU to the
device comes from the PCI paths in sysfs (the same rule as the nearest NIC, `sysfs.py`).
A host with no /sys/class/infiniband has no RDMA NICs: empty lists, never an error.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import cast

from peerwatch.probes.nics import COUNTERS, MAX_NICS, NicDevice, NicPort, PathName
from peerwatch.probes.nvidia.sysfs import Sysfs
from peerwatch.probes.topology import sysfs_path_level

DEVICE_FILES = ("hca_type", "fw_ver", "board_id")
NO_PMA = "N/A"
_RATE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*Gb/sec")
_BDF = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


class Unread(Exception):
    """One sysfs value that could not be read; its message is the reason."""


def read_text(path: Path) -> str:
    """The file's text, stripped; Unread "not supported" when absent, "failed" otherwise."""
    try:
        return path.read_text(errors="replace").strip()
    except FileNotFoundError:
        raise Unread(f"not supported: no {path.name}") from None
    except OSError as exc:
        raise Unread(f"failed: {path.name}: {exc.strerror or exc}") from None


def read_counter(path: Path) -> int:
    """A counter file's value; Unread where the device has no PMA or the text is no count."""
    text = read_text(path)
    if text.startswith(NO_PMA):
        raise Unread(f"not supported: {text}")
    try:
        value = int(text, 0)
    except ValueError:
        raise Unread(f"failed: {path.name} reads {text[:40]!r}, not a count") from None
    if value < 0:
        raise Unread(f"failed: {path.name} reads {value}")
    return value


def state_name(text: str) -> str:
    """"4: ACTIVE" -> "ACTIVE"; "5: LinkUp" -> "LinkUp" (the number is the spec's code)."""
    return text.split(":", 1)[-1].strip()


def parse_rate(text: str) -> float:
    """"400 Gb/sec (4X NDR)" -> 400.0 (active width x active speed, in Gb/s)."""
    found = _RATE.match(text)
    if found is None:
        raise Unread(f"failed: rate reads {text[:40]!r}")
    return float(found[1])


def read_dir(directory: Path, unread: dict[str, str], prefix: str) -> dict[str, int]:
    """Every counter file of `directory` (each alone); `lifespan` is a setting, not a count."""
    out: dict[str, int] = {}
    try:
        names = sorted(p.name for p in directory.iterdir() if p.is_file())
    except OSError:
        return out
    for name in names:
        if name == "lifespan":
            continue
        try:
            out[name] = read_counter(directory / name)
        except Unread as why:
            unread[f"{prefix}{name}"[:64]] = str(why)
    return out


class NicReader:
    """The RDMA devices and ports under a `Sysfs` root (injectable: tests replay fixtures)."""

    def __init__(self, sysfs: Sysfs) -> None:
        self.sysfs = sysfs
        self.base = sysfs.root / "sys/class/infiniband"

    def names(self) -> list[str]:
        return sorted(p.name for p in self.base.iterdir())[:MAX_NICS] if self.base.is_dir() \
            else []

    def devices(self, gpus: dict[int, str]) -> list[NicDevice]:
        """Every device, with the path level from each GPU (`gpus`: index -> PCI bus id)."""
        return [self.device(name, gpus) for name in self.names()]

    def device(self, name: str, gpus: dict[int, str]) -> NicDevice:
        root, unread = self.base / name, {}
        fields: dict[str, str] = {}
        for key in DEVICE_FILES:
            try:
                fields[key] = read_text(root / key)[:64]
            except Unread as why:
                unread[key] = str(why)
        bdf, path, numa = self._pci(root, unread)
        return NicDevice(name=name, pci_bus_id=bdf, numa_node=numa, ports=self._ports(root),
                         gpu_paths=self._gpu_paths(path, numa, gpus, unread), unread=unread,
                         **fields)

    def _pci(self, root: Path, unread: dict[str, str]
             ) -> tuple[str | None, tuple[str, ...] | None, int | None]:
        device = root / "device"
        if not device.exists():
            unread["device"] = "not supported: no PCI device link (a software RDMA device?)"
            return None, None, None
        real = device.resolve()
        path = self.sysfs.nic_path(root.name)
        bdf = real.name if _BDF.fullmatch(real.name) else None
        if path is None:
            unread["device"] = f"failed: {real} is not below a PCI root"
        return bdf, path, Sysfs._read_numa(device)

    def _gpu_paths(self, path: tuple[str, ...] | None, numa: int | None,
                   gpus: dict[int, str], unread: dict[str, str]) -> dict[int, PathName]:
        if path is None:
            return {}
        out = {}
        for index, bus_id in sorted(gpus.items()):
            gpu_path = self.sysfs.pci_path(bus_id)
            if gpu_path is None:
                unread[f"gpu{index}_path"] = f"failed: GPU {bus_id} is not in sysfs"
                continue
            level = sysfs_path_level(gpu_path, path, self.sysfs.numa_node(bus_id), numa)
            out[index] = cast(PathName, level.value)
        return out

    @staticmethod
    def _ports(root: Path) -> list[int]:
        ports = root / "ports"
        if not ports.is_dir():
            return []
        return sorted(int(p.name) for p in ports.iterdir() if p.name.isdigit())[:8]

    def ports(self) -> list[NicPort]:
        """Every port of every device, sampled now."""
        return [self.port(name, n) for name in self.names()
                for n in self._ports(self.base / name)]

    def port(self, name: str, number: int) -> NicPort:
        root, unread = self.base / name / "ports" / str(number), {}
        values: dict[str, object] = {}
        for key, parse in (("state", state_name), ("phys_state", state_name),
                           ("link_layer", str), ("rate", str)):
            try:
                values[key] = parse(read_text(root / key))[:32 if key != "rate" else 64]
            except Unread as why:
                unread[key] = str(why)
        rate_text = values.pop("rate", None)
        if isinstance(rate_text, str):
            values["rate_text"] = rate_text
            try:
                values["rate_gbps"] = parse_rate(rate_text)
            except Unread as why:
                unread["rate"] = str(why)
        counters = read_dir(root / "counters", unread, "")
        missing = sorted(set(COUNTERS) - set(counters) - set(unread))
        for key in missing:
            unread[key] = f"not supported: no counters/{key}"
        hw = read_dir(root / "hw_counters", unread, "hw_")
        return NicPort(device=name, port=number, counters=counters, hw_counters=hw,
                       unread=unread, **values)  # type: ignore[arg-type]


def nic_rate_bps(sysfs: Sysfs, nic: str) -> float | None:
    """The best rate of the NIC's ACTIVE ports, in bytes per second (what GPUDirect RDMA
    through it can reach at most); None where no port is ACTIVE or none says its rate."""
    reader = NicReader(sysfs)
    rates = [p.rate_gbps for n in reader._ports(reader.base / nic)
             if (p := reader.port(nic, n)).state == "ACTIVE" and p.rate_gbps]
    return max(rates) * 1e9 / 8 if rates else None
