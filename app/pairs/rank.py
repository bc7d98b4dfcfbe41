"""One rank of a pair job, on its node: meet the other rank through the server, measure,
and (rank 0) post the result.

The rank knows its node (`PEERWATCH_PAIRS_NODE`, Slurm's `SLURMD_NODENAME`, else the short
host name) and finds its rank from the job (rank 0 is the job's `host`), so it never depends
on the order the scheduler starts tasks in. It speaks with its own node's probe credential.
Rank 1 stays until rank 0 has posted (its GPU is the far end of the transfer), then exits.

The transfer, by default: NCCL send/recv between the two nodes' GPUs over the network
(probes/net_transfer.py; CuPy's NCCL in probes/nvidia/net_transfers.py). Once both ranks
have met, rank 0 makes the NCCL unique id and hands it to rank 1 through the server
(`PUT /api/v1/network/jobs/{id}/rendezvous`, readable only with the two hosts' credentials);
rank 1 waits for it as it waits for everything here (`MEET_LIMIT_S`). Both then connect and
exchange; each step has its limit, a stalled one aborts the communicator, and rank 0 posts
the figure or the error (a rank whose node has no GPU or NCCL says so in it): never a hang.
A server that is late or unreachable is asked again (`PatientClient`), never the end of a
job whose two nodes are already allocated.
This path has not run on GPUs yet (docs/network.md). `--simnet FILE` instead measures the
simulated leaf/spine network of probes/sim/simnet.py (the tests, the demo, the real-Slurm
test) with no NCCL at all; the CPU tests drive the NCCL path with probes/sim/simnccl.py.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from peerwatch.app.pairs.client import PairsClient, ServerUnavailable
from peerwatch.probes.errors import PeerwatchProbeError
from peerwatch.probes.net_transfer import (
    DEFAULT_OPTIONS,
    REAL_TIME,
    NetOptions,
    NetTransport,
    Pacer,
    decode_id,
    encode_id,
    measure_pair,
)
from peerwatch.probes.report import TestName, TransferResult, Unit, valid_hostname
from peerwatch.probes.sim.simnet import SimHost, SimNetwork, fault_of

log = logging.getLogger("peerwatch.pairs")

MEET_LIMIT_S = 300.0  # the other rank's node may still be starting its task
POLL_S = 0.5
FINISHED = ("done", "failed", "cancelled")


class RankError(RuntimeError):
    """The rank cannot do its part; the message says why."""


def node_name() -> str:
    for var in ("PEERWATCH_PAIRS_NODE", "SLURMD_NODENAME"):
        if os.environ.get(var):
            return valid_hostname(os.environ[var])
    return valid_hostname(socket.gethostname().split(".")[0])


def load_simnet(path: Path) -> SimNetwork:
    raw = json.loads(path.read_text())
    hosts = {h["name"]: SimHost(**h) for h in raw["hosts"]}
    return SimNetwork(hosts, [fault_of(f) for f in raw.get("faults", [])], raw.get("seed", 0))


def nccl_transport() -> NetTransport:
    """This node's GPU under CuPy's NCCL (FabricUnavailable where there is none)."""
    from peerwatch.probes.nvidia.net_transfers import NcclNet  # CuPy only when measuring

    return NcclNet()


class PatientClient:
    """The rank's side of the server, asking again while the server is unreachable or late
    (a loaded server's one slow answer must not lose a pair job whose nodes are already
    allocated), for up to MEET_LIMIT_S a call. Every call the rank makes is safe to repeat
    but the results post; that one is repeated only while the job is unfinished (an answer
    lost after the store must not store the figure twice)."""

    def __init__(self, client: PairsClient, clock: Callable[[], float]) -> None:
        self.inner, self.clock = client, clock

    def _again(self, what: str, call: Callable[[], dict[str, Any]],
               stop: Callable[[], dict[str, Any] | None] = lambda: None) -> dict[str, Any]:
        deadline = self.clock() + MEET_LIMIT_S
        while True:
            try:
                return call()
            except ServerUnavailable as exc:
                if self.clock() > deadline:
                    raise RankError(f"{what}: the server did not answer within "
                                    f"{MEET_LIMIT_S:g} s: {exc}") from exc
                log.warning("%s: %s; asking again", what, exc)
            time.sleep(POLL_S)
            if (done := stop()) is not None:
                return done

    def job(self, job_id: int) -> dict[str, Any]:
        return self._again(f"pair job {job_id}", lambda: self.inner.job(job_id))

    def join(self, job_id: int, rank: int, host: str) -> dict[str, Any]:
        return self._again(f"pair job {job_id}, joining as rank {rank}",
                           lambda: self.inner.join(job_id, rank, host))

    def rendezvous(self, job_id: int, host: str) -> dict[str, Any]:
        return self._again(f"pair job {job_id}, rank 0's id",
                           lambda: self.inner.rendezvous(job_id, host))

    def put_rendezvous(self, job_id: int, host: str, nccl_id: str) -> dict[str, Any]:
        return self._again(f"pair job {job_id}, handing out the id",
                           lambda: self.inner.put_rendezvous(job_id, host, nccl_id))

    def post_results(self, host: str, job_id: int, results: list[dict[str, Any]]
                     ) -> dict[str, Any]:
        def finished() -> dict[str, Any] | None:
            job = self.job(job_id)
            return {"state": job["state"]} if job["state"] in FINISHED else None
        return self._again(f"pair job {job_id}, posting the result",
                           lambda: self.inner.post_results(host, job_id, results), finished)


def run_rank(client: PairsClient, job_id: int, node: str,
             measure: Callable[[str, str], float] | None,
             clock: Callable[[], float] = time.monotonic,
             net: Callable[[], NetTransport] = nccl_transport,
             options: NetOptions = DEFAULT_OPTIONS, pacer: Pacer = REAL_TIME
             ) -> dict[str, Any]:
    """`measure` (the simulated network's, `--simnet`) or else NCCL through `net`."""
    server = PatientClient(client, clock)
    job = server.job(job_id)
    if node not in (job["host"], job["peer_host"]):
        raise RankError(f"{node} is not in pair job {job_id} ({job['host']} <-> "
                        f"{job['peer_host']})")
    rank = 0 if node == job["host"] else 1
    server.join(job_id, rank, node)
    job = _wait(server, job_id, lambda j: j["state"] != "submitted" and len(j["ranks"]) == 2,
                clock, "the other rank")
    if rank == 1:
        if measure is None:
            _far_end(server, job_id, node, net, options, pacer, clock)
        return _wait(server, job_id, lambda j: j["state"] in FINISHED, clock,
                     "rank 0's result")
    peer = job["peer_host"]
    started = datetime.now(UTC)
    if measure is not None:
        result = _result(peer, measure(node, peer), started, job_id, None)
    else:
        try:
            result = _result(peer, _near_end(server, job_id, node, net, options, pacer),
                             started, job_id, None)
        except PeerwatchProbeError as exc:
            result = _result(peer, None, started, job_id,
                             f"{type(exc).__name__}: {exc}"[:2000])
    return server.post_results(node, job_id, [result])


def _near_end(client: PatientClient, job_id: int, node: str, net: Callable[[], NetTransport],
              options: NetOptions, pacer: Pacer) -> float:
    """Rank 0: the NCCL id made here, handed over through the server, then the transfer."""
    transport = net()
    uid = transport.unique_id()
    client.put_rendezvous(job_id, node, encode_id(uid))
    return measure_pair(transport, uid, 0, options, pacer)


def _far_end(client: PatientClient, job_id: int, node: str, net: Callable[[], NetTransport],
             options: NetOptions, pacer: Pacer, clock: Callable[[], float]) -> None:
    """Rank 1: rank 0's id from the server, then the transfer. A failure here is logged, not
    raised: rank 0 then times out or sees the abort and posts the job's error result."""
    rv = _wait(client, job_id, lambda r: r["nccl_id"] is not None or r["state"] in FINISHED,
               clock, "rank 0's NCCL id", fetch=lambda: client.rendezvous(job_id, node))
    if rv["nccl_id"] is None:  # rank 0 could not measure (its error result says why)
        return
    try:
        measure_pair(net(), decode_id(rv["nccl_id"]), 1, options, pacer)
    except PeerwatchProbeError as exc:
        log.warning("pair job %s, rank 1 (%s): %s: %s", job_id, node, type(exc).__name__, exc)


def _result(peer: str, value: float | None, started: datetime, job_id: int,
            error: str | None) -> dict[str, Any]:
    return TransferResult(test=TestName.NET_WRITE, src=0, dst=0, peer_host=peer, value=value,
                          unit=Unit.BYTES_PER_SECOND, started_at=started, error=error,
                          job=f"pair-{job_id}").model_dump(mode="json")


def _wait(client: PatientClient, job_id: int, done: Callable[[dict[str, Any]], bool],
          clock: Callable[[], float], what: str,
          fetch: Callable[[], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Poll the job (or `fetch`: anything with its `state` and `reason`) until `done`."""
    deadline = clock() + MEET_LIMIT_S
    while True:
        job = fetch() if fetch is not None else client.job(job_id)
        if done(job):
            return job
        if job["state"] in ("failed", "cancelled"):
            raise RankError(f"pair job {job_id} is {job['state']}: {job['reason']}")
        if clock() > deadline:
            raise RankError(f"pair job {job_id}: no sign of {what} within {MEET_LIMIT_S:g} s")
        time.sleep(POLL_S)
