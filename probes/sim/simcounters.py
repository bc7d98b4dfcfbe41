"""The simulated NVLink counters: cumulative bytes and lifetime error counts per port.

They are honest in the way the sweep relies on: every byte a simulated test or a simulated
foreign job moves is added to the sender's TX and the receiver's RX counters, spread evenly
over the ports that carry it (as THROUGHPUT_DATA_TX spread 10 GiB exactly over 18 links on
the H200 pair), and they read back KiB-granular like NVML's. Error counters start at the
lifetime values healthy H200s show (CRC_DATA / ECC_DATA 5-20 per link, the rest 0) and only
move when an `ErrorGrowth` fault says so.
"""

from __future__ import annotations

import random
from collections import defaultdict

from peerwatch.probes.report import LinkCounters
from peerwatch.probes.sim.presets import Preset
from peerwatch.probes.sim.simtopo import SimTopology

ERROR_COUNTERS = ("replay", "recovery", "crc_flit", "crc_data", "ecc_data")


class CounterBank:
    def __init__(self, preset: Preset, topo: SimTopology, seed: int) -> None:
        self.tx: defaultdict[tuple[int, int], float] = defaultdict(float)
        self.rx: defaultdict[tuple[int, int], float] = defaultdict(float)
        self.errors: dict[tuple[int, int], dict[str, float]] = {}
        rng = random.Random(f"{seed}|{preset.name}|lifetime-errors")
        for gpu, ports in topo.ports.items():
            slot = preset.gpus[gpu]
            for port in ports:
                crc = slot.crc_data[port.link] if slot.crc_data else rng.randint(5, 20)
                ecc = slot.ecc_data[port.link] if slot.ecc_data else crc + rng.randint(0, 6)
                self.errors[(gpu, port.link)] = dict.fromkeys(ERROR_COUNTERS, 0.0) | {
                    "crc_data": float(crc), "ecc_data": float(ecc)}

    def flow(self, topo: SimTopology, sender: int, receiver: int | None, nbytes: float) -> None:
        """`nbytes` went from `sender` to `receiver` (None: into the switch) over NVLink."""
        if nbytes <= 0:
            return
        out = topo.links_toward(sender, receiver)
        for port in out:
            self.tx[(sender, port.link)] += nbytes / len(out)
        if receiver is None:
            return
        into = topo.links_toward(receiver, sender)
        for port in into:
            self.rx[(receiver, port.link)] += nbytes / len(into)

    def add_errors(self, gpu: int, link: int, counter: str, amount: float) -> None:
        if (gpu, link) in self.errors:
            self.errors[(gpu, link)][counter] += amount

    def read(self, topo: SimTopology, gpu: int) -> list[LinkCounters]:
        out = []
        for port in topo.ports[gpu]:
            key = (gpu, port.link)
            errs = self.errors[key]
            out.append(LinkCounters(
                gpu=gpu, link=port.link,
                tx_bytes=int(self.tx[key]) // 1024 * 1024,  # NVML counts whole KiB
                rx_bytes=int(self.rx[key]) // 1024 * 1024,
                replay=int(errs["replay"]), recovery=int(errs["recovery"]),
                crc_flit=int(errs["crc_flit"]), crc_data=int(errs["crc_data"]),
                ecc_data=int(errs["ecc_data"]),
            ))
        return out
