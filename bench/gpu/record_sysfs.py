"""Record the parts of this host's /sys the NIC and RDMA readers use, as a replayable fixture.

Run it on a GPU host with RDMA NICs (bench/gpu/checks.sh does, as step `nics`):

    OUT=/tmp/peerwatch-gpu python bench/gpu/record_sysfs.py

It writes $OUT/sysfs_nics.json in the format of `probes/nvidia/sysfs_tree.py` (what the CPU
tests replay: tests/fixtures/sysfs/): every RDMA device under /sys/class/infiniband (its
files, ports, counters and hw_counters), the PCI functions from each root complex down to
every RDMA device and NVIDIA GPU (vendor, class, numa_node, and the /sys/bus/pci links), and
whether nvidia_peermem is loaded and registered with ib_core. Beside it, $OUT/sysfs_cmds.json
keeps what `ibstat`, `ibv_devinfo` and `nvidia-smi topo -m` print, to check the reading by.
It then replays the recording into a temporary folder and reads both the live /sys and the
replay with the probe's own reader: exit status 0 when the two readings agree (counters may
move between the two reads: only their names are compared), 1 when they differ, and 0 with
"skipped: no RDMA devices" on a host without any.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from peerwatch.probes.nvidia import sysfs_tree  # noqa: E402
from peerwatch.probes.nvidia.nics import NicReader  # noqa: E402
from peerwatch.probes.nvidia.sysfs import Sysfs  # noqa: E402

PCI_FILES = ("vendor", "device", "class", "numa_node", "current_link_speed",
             "current_link_width", "max_link_speed", "max_link_width")
COMMANDS = ("ibstat", "ibv_devinfo", "nvidia-smi topo -m", "uname -r", "which ib_write_bw")
MAX_DEPTH = 4  # ports/<n>/counters/<name>
SKIP = {"gids", "pkeys", "gid_attrs", "power", "msi_irqs"}  # hundreds of files, never read


def walk(root: Path, folder: Path, files: dict[str, str], links: dict[str, str],
         depth: int = 0) -> None:
    """Every file and link below `folder` (links are kept, never followed)."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.name in SKIP:
            continue
        if entry.is_symlink():
            sysfs_tree.record_link(root, entry, links)
        elif entry.is_dir() and depth < MAX_DEPTH:
            walk(root, entry, files, links, depth + 1)
        elif entry.is_file():
            sysfs_tree.record_file(root, entry, files)


def record_pci_chain(root: Path, device: Path, files: dict[str, str],
                     links: dict[str, str]) -> None:
    """The device's own PCI files and those of every bridge above it, and its bus link
    (the files are recorded at their real place under sys/devices)."""
    real = device.resolve()
    bus = root / "sys/bus/pci/devices" / real.name
    if bus.is_symlink():
        sysfs_tree.record_link(root, bus, links)
    node = real
    while (node != node.parent and node.is_relative_to(root.resolve())
           and (node.name.startswith("pci") or ":" in node.name)):
        for name in PCI_FILES:
            sysfs_tree.record_file(root, node / name, files)
        if node.name.startswith("pci"):
            break
        node = node.parent


def record(root: Path) -> dict[str, Any]:
    files: dict[str, str] = {}
    links: dict[str, str] = {}
    base = root / "sys/class/infiniband"
    for dev in sorted(base.iterdir()) if base.is_dir() else []:
        walk(root, dev, files, links)
        if (dev / "device").exists():
            record_pci_chain(root, dev / "device", files, links)
    pci = root / "sys/bus/pci/devices"
    for dev in sorted(pci.iterdir()) if pci.is_dir() else []:
        vendor = (dev / "vendor").read_text().strip() if (dev / "vendor").exists() else ""
        klass = (dev / "class").read_text().strip() if (dev / "class").exists() else ""
        if vendor == "0x10de" and klass.startswith(("0x0300", "0x0302")):
            record_pci_chain(root, dev, files, links)
    for module in ("nvidia_peermem", "ib_core/holders/nvidia_peermem"):
        if (root / "sys/module" / module).exists():
            files[f"sys/module/{module}/present"] = "recorded: exists"
    return {"note": f"recorded by bench/gpu/record_sysfs.py on {os.uname().nodename} "
                    f"(root {root})",
            "files": files, "links": links}


def commands() -> dict[str, str]:
    out = {}
    for cmd in COMMANDS:
        try:
            done = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60)
            out[cmd] = (done.stdout + done.stderr)[-20000:]
        except (OSError, subprocess.SubprocessError) as exc:
            out[cmd] = f"failed: {exc}"
    return out


def reading(root: Path) -> list[tuple[object, ...]]:
    """What the probe's reader makes of a root: per port, everything but counter values."""
    sysfs = Sysfs(root)
    reader = NicReader(sysfs)
    gpus = {i: g.pci_bus_id for i, g in enumerate(sysfs.nvidia_gpus() or [])}  # bus order
    devices = [(d.name, d.pci_bus_id, d.numa_node, sorted(d.gpu_paths.items()))
               for d in reader.devices(gpus)]
    return [*devices, *((p.device, p.port, p.state, p.phys_state, p.rate_gbps, p.link_layer,
                         sorted(p.counters), sorted(p.hw_counters), sorted(p.unread))
                        for p in reader.ports())]


def main(argv: list[str] | None = None) -> int:
    from bench.helpers.cli import parser as bench_parser

    parser = bench_parser(__doc__, __file__)
    parser.add_argument("--root", default="/", help="the root whose /sys to record "
                        "(default: /; a replayed fixture for the smoke test)")
    parser.add_argument("--out", default=os.environ.get("OUT"), help="folder for "
                        "sysfs_nics.json (default: $OUT, else a new temporary folder)")
    args = parser.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="peerwatch-sysfs-"))
    out.mkdir(parents=True, exist_ok=True)
    live = Path(args.root)
    if not NicReader(Sysfs(live)).names():
        print("skipped: no RDMA devices under /sys/class/infiniband on this host")
        return 0
    tree = record(live)
    (out / "sysfs_nics.json").write_text(json.dumps(tree, indent=1))
    if args.root == "/":  # the tools speak of this host only
        (out / "sysfs_cmds.json").write_text(json.dumps(commands(), indent=1))
    with tempfile.TemporaryDirectory() as tmp:
        replayed = reading(sysfs_tree.replay(tree, Path(tmp)))
    now = reading(live)
    for row in now:
        if len(row) == 4:
            print("nic", *row)
        else:
            counters, hw = row[6], row[7]
            assert isinstance(counters, list) and isinstance(hw, list)
            print("port", *row[:6], f"{len(counters)} counters, {len(hw)} hw_counters")
    print(f"wrote {out / 'sysfs_nics.json'}: {len(tree['files'])} files")
    if replayed != now:
        print("replay differs from the live reading:", replayed, now, sep="\n")
        return 1
    print("replay matches the live reading")
    return 0


if __name__ == "__main__":
    sys.exit(main())
