"""Pure decoding of what NVML and sysfs report into the shapes `nvidia-smi topo -m` shows.

Kept apart from `probes/nvidia/nvml.py` so the rules that matter most (how NV# is derived on an
NVSwitch host, how a PCIe path level is named) can be read and tested without any NVML at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from peerwatch.probes.report import LinkState, NvLinkPort, PathLevel, RemoteType

# nvmlNvlinkVersion_t: the enum NVML returns, not the version number (6 means NVLink 4.0).
NVLINK_VERSIONS: dict[int, str] = {
    1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0", 8: "6.0",
}

# nvmlGpuTopologyLevel_t -> nvidia-smi's labels. It describes the PCIe path only.
PATH_LEVELS: dict[int, PathLevel] = {
    0: PathLevel.INTERNAL,
    10: PathLevel.PIX,
    20: PathLevel.PXB,
    30: PathLevel.PHB,
    40: PathLevel.NODE,
    50: PathLevel.SYS,
}
PATH_ORDER: tuple[PathLevel, ...] = tuple(PATH_LEVELS.values())  # nearest first

# nvmlNvLinkDeviceType_t
REMOTE_TYPES: dict[int, RemoteType] = {
    0: RemoteType.GPU,
    1: RemoteType.CPU,  # IBM NPU
    2: RemoteType.NVSWITCH,
    0xFF: RemoteType.UNKNOWN,
}


def as_text(value: object) -> str:
    """NVML strings arrive as bytes or str depending on the bindings' version."""
    return value.decode() if isinstance(value, bytes) else str(value)


def nvlink_version(enum_value: int | None) -> str | None:
    """'4.0' for NVML's enum 6; None for INVALID (0) or a value newer than this table."""
    if enum_value is None:
        return None
    return NVLINK_VERSIONS.get(int(enum_value))


def path_level(code: int) -> PathLevel:
    """NVML's common-ancestor code as a PathLevel; unknown codes count as the farthest (SYS)."""
    return PATH_LEVELS.get(int(code), PathLevel.SYS)


def parse_cpulist(text: str | None) -> frozenset[int]:
    """ "0-31,64-95" as the set of CPU numbers; empty for None, "" or text that is no list."""
    cpus: set[int] = set()
    for part in (text or "").split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return frozenset()
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(cpus)


def cpulist(mask_words: Iterable[int], word_bits: int = 64) -> str | None:
    """A CPU bitmask (least significant word first, as NVML returns it) as "0-31,64-95"."""
    cpus = [
        w * word_bits + bit
        for w, word in enumerate(mask_words)
        for bit in range(word_bits)
        if int(word) >> bit & 1
    ]
    if not cpus:
        return None
    ranges: list[str] = []
    start = prev = cpus[0]
    for cpu in [*cpus[1:], None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        ranges.append(f"{start}" if start == prev else f"{start}-{prev}")
        if cpu is not None:
            start = prev = cpu
    return ",".join(ranges)


def normalize_bus_id(bus_id: str | bytes | None) -> str | None:
    """'00000000:00:06.0' -> '0000:00:06.0' (sysfs and CUDA's form); None for no device.

    NVSwitch hosts report every link's remote PCI id as FFFFFFFF:FF:FF.0: that names nothing.
    """
    if bus_id is None:
        return None
    text = bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id)
    text = text.strip().strip("\x00")
    parts = text.split(":")
    if len(parts) != 3 or "." not in parts[2]:
        return None
    try:
        domain, bus = int(parts[0], 16), int(parts[1], 16)
        dev, fn = (int(x, 16) for x in parts[2].split("."))
    except ValueError:
        return None
    if domain == 0xFFFFFFFF or (bus == 0xFF and dev == 0xFF):
        return None
    return f"{domain:04x}:{bus:02x}:{dev:02x}.{fn:x}"


def _active(ports: Sequence[NvLinkPort]) -> list[NvLinkPort]:
    return [p for p in ports if p.state is LinkState.UP]


def nvlink_width(
    src: int, dst: int, src_ports: Sequence[NvLinkPort], dst_ports: Sequence[NvLinkPort]
) -> tuple[int, bool]:
    """(NV#, via_nvswitch) for the pair, from both GPUs' NVLink ports.

    On an NVSwitch host NVML cannot say which peer a link reaches (every remote is the switch),
    so the usable GPU<->GPU width is the smaller of the two GPUs' active switch links. On a
    direct-attached board the remote PCI id names the peer: count the active links to it.
    """
    src_up, dst_up = _active(src_ports), _active(dst_ports)
    src_switch = [p for p in src_up if p.remote_type is RemoteType.NVSWITCH]
    dst_switch = [p for p in dst_up if p.remote_type is RemoteType.NVSWITCH]
    if src_switch and dst_switch:
        return min(len(src_switch), len(dst_switch)), True
    direct = [p for p in src_up if p.remote_gpu == dst]
    if not direct:  # the peer's view, in case src's remote ids were unreadable
        direct = [p for p in dst_up if p.remote_gpu == src]
    return len(direct), False


def topology_label(width: int, pcie: PathLevel) -> str:
    """What `nvidia-smi topo -m` prints for a pair: NV# when NVLink joins them, else the path."""
    return f"NV{width}" if width else pcie.value


def sysfs_path_level(
    a: Sequence[str], b: Sequence[str], numa_a: int | None, numa_b: int | None
) -> PathLevel:
    """PCIe path level between two devices from their sysfs paths under /sys/devices.

    a, b: path components starting at the root complex, e.g.
    ["pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:08.0", "0000:05:00.0"].
    Different root complexes: NODE on one NUMA node, SYS across nodes. Same root complex but
    meeting only there: PHB. Otherwise they share a bridge: PIX when each hangs at most one
    bridge below the shared one (the two ports of one switch), PXB when deeper.
    """
    if list(a) == list(b):
        return PathLevel.INTERNAL
    if not a or not b or a[0] != b[0]:
        same_node = numa_a is None or numa_b is None or numa_a == numa_b
        return PathLevel.NODE if same_node else PathLevel.SYS
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    if common <= 1:
        return PathLevel.PHB
    below = max(len(a) - common, len(b) - common)
    return PathLevel.PIX if below <= 2 else PathLevel.PXB
