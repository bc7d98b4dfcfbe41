"""A simulated NCCL between the two ranks of pair jobs, on the simulated network (simnet.py):
what probes/net_transfer.py drives in the CPU tests instead of CuPy's NCCL.

Both ranks' transports come from one `SimNccl` (the tests run the two ranks as threads of
one process). It keeps NCCL's rules that the rank logic depends on: a communicator comes up
only when both ranks have called `connect` with the same id; a step finishes only when the
other rank has queued as many iterations (a send needs its receive); an aborted rank is an
async error at the other's next look; and its device time is the simulated network's figure
for the pair (`SimNetwork.measure`, rank 0's host first), so a bad cable reads slow here as
it does with `--simnet`. `stalled` hosts connect but never finish a step (a NIC that stopped
mid-transfer); every abort and close is recorded for the tests.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field

from peerwatch.probes.errors import TransferError
from peerwatch.probes.sim.simnet import SimNetwork


@dataclass
class _Slot:
    hosts: dict[int, str] = field(default_factory=dict)
    queued: dict[int, int] = field(default_factory=lambda: {0: 0, 1: 0})
    aborted: set[int] = field(default_factory=set)


@dataclass
class SimNccl:
    net: SimNetwork
    stalled: set[str] = field(default_factory=set)
    salt: int = 0
    aborted: list[tuple[str, int]] = field(default_factory=list)  # (host, rank)
    closed: list[tuple[str, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._cond = threading.Condition()
        self._slots: dict[bytes, _Slot] = {}

    def transport(self, host: str) -> SimTransport:
        return SimTransport(self, host)


@dataclass
class SimTransport:
    world: SimNccl
    host: str

    def unique_id(self) -> bytes:
        uid = secrets.token_bytes(128)  # NCCL_UNIQUE_ID_BYTES
        with self.world._cond:
            self.world._slots[uid] = _Slot()
        return uid

    def connect(self, uid: bytes, rank: int) -> SimComm:
        world = self.world
        with world._cond:
            slot = world._slots.get(uid)
            if slot is None:
                raise TransferError("NCCL init: no rank 0 made this unique id")
            slot.hosts[rank] = self.host
            world._cond.notify_all()
            world._cond.wait_for(lambda: len(slot.hosts) == 2)
        return SimComm(world, slot, rank, self.host)


@dataclass
class SimComm:
    world: SimNccl
    slot: _Slot
    rank: int
    host: str

    def exchange(self, nbytes: int, iters: int) -> SimStep:
        with self.world._cond:
            self.slot.queued[self.rank] += iters
            return SimStep(self, self.slot.queued[self.rank], nbytes * iters)

    def check(self) -> None:
        return None  # what was sent arrives: the simulated network corrupts nothing

    def abort(self) -> None:
        with self.world._cond:
            self.slot.aborted.add(self.rank)
            self.world.aborted.append((self.host, self.rank))

    def close(self) -> None:
        with self.world._cond:
            self.world.closed.append((self.host, self.rank))


@dataclass
class SimStep:
    comm: SimComm
    target: int  # iterations both ranks must have queued
    nbytes: int

    def done(self) -> bool:
        slot, world = self.comm.slot, self.comm.world
        with world._cond:
            if 1 - self.comm.rank in slot.aborted:
                raise TransferError("NCCL async error: the remote rank aborted")
            if world.stalled & set(slot.hosts.values()):
                return False
            return min(slot.queued.values()) >= self.target

    def seconds(self) -> float:
        hosts = self.comm.slot.hosts
        return self.nbytes / self.comm.world.net.measure(hosts[0], hosts[1], self.comm.world.salt)
