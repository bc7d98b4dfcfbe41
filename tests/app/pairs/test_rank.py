"""A pair job's two ranks over NCCL (`run_rank` without `--simnet`), against the real server
app, each rank with its own host's probe credential, the transfer on the simulated NCCL
(probes/sim/simnccl.py) over the simulated network: the id handed from rank 0 to rank 1
through the server, the figure posted, and every way the NCCL part ends without a hang
(the other rank never connects, a stalled step aborted, a node without GPU or NCCL), each
an error result that fails the job, never a rank waiting for ever.

Rank 1 starts once rank 0 has joined, so the two joins never race (SQLite has no row lock).
Limits are short only where nothing could finish anyway; healthy steps get minutes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from peerwatch.app.pairs.client import PairsClient
from peerwatch.app.pairs.rank import run_rank
from peerwatch.probes.errors import FabricUnavailable
from peerwatch.probes.net_transfer import NetOptions, NetTransport
from peerwatch.probes.sim.simnccl import SimNccl
from peerwatch.probes.sim.simnet import BadCable, SimNetwork, leaf_spine
from tests.app.conftest import credential
from tests.app.network.fleet import setup
from tests.conftest import eventually

HEALTHY = NetOptions(nbytes=1 << 20, warmup=2, iters=5, connect_limit_s=300,
                     step_limit_s=300)
A, B = "node-1", "node-2"


class Shared(httpx.BaseTransport):
    """The test app's transport, lent: a rank closing its client leaves it open for the
    other rank (closing it under a rank still posting was a ClosedResourceError)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.inner.handle_request(request)

    def close(self) -> None:
        pass


def pairs_client(client: TestClient, role: str, subject: str) -> PairsClient:
    token = credential(client, role, subject)["Authorization"].removeprefix("Bearer ")
    return PairsClient(str(client.base_url), token,
                       transport=Shared(client._transport))  # type: ignore[attr-defined]


@pytest.fixture
def job(client: TestClient) -> Iterator[tuple[SimNetwork, int]]:
    net = leaf_spine(1, 3)
    setup(client, net)
    controller = pairs_client(client, "drain", "pairs-controller")
    jid = controller.create_job(A, B, "slurm", "test")["id"]
    controller.move_job(jid, "submitted", scheduler_job="1")
    yield net, jid
    controller.close()


def run_both(client: TestClient, jid: int, net0: Callable[[], NetTransport],
             net1: Callable[[], NetTransport], opts0: NetOptions = HEALTHY,
             opts1: NetOptions = HEALTHY,
             measure: Callable[[str, str], float] | None = None) -> dict[int, Any]:
    """Each rank's last answer (or exception), as two threads; rank 1 once rank 0 joined."""
    out: dict[int, Any] = {}

    def rank(r: int, host: str, net: Callable[[], NetTransport], opts: NetOptions) -> None:
        pc = pairs_client(client, "probe", host)
        try:
            out[r] = run_rank(pc, jid, host, measure, net=net, options=opts)
        except Exception as exc:  # noqa: BLE001 - the test reads it
            out[r] = exc
        finally:
            pc.close()

    first = threading.Thread(target=rank, args=(0, A, net0, opts0))
    first.start()
    assert eventually(lambda: "0" in client.get(f"/api/v1/network/jobs/{jid}").json()["ranks"]
                      or not first.is_alive()), "rank 0 never joined"
    second = threading.Thread(target=rank, args=(1, B, net1, opts1))
    second.start()
    for t in (first, second):
        t.join(timeout=600)
        assert not t.is_alive(), "a rank hung past every limit"
    return out


def stored(client: TestClient) -> dict[str, Any]:
    pairs = client.get("/api/v1/network/pairs", params={"test": "net_write"}).json()["pairs"]
    (pair,) = [p for p in pairs if (p["host"], p["peer_host"]) == (A, B)]
    return dict(pair)


@pytest.mark.parametrize("faults", [[], [BadCable(B)]], ids=["healthy", "bad-cable"])
def test_rank_0_posts_the_nccl_figure_after_handing_its_id_to_rank_1(
        client: TestClient, job: tuple[SimNetwork, int], faults: list[BadCable]) -> None:
    net, jid = job
    net.faults = list(faults)
    world = SimNccl(net)
    out = run_both(client, jid, lambda: world.transport(A), lambda: world.transport(B))
    assert out[0] == {"stored": 1, "faults": 1 if faults else 0}, out
    assert out[1]["state"] == "done", out
    assert stored(client)["measured_bps"] == pytest.approx(net.measure(A, B))
    assert sorted(world.closed) == [(A, 0), (B, 1)] and world.aborted == []
    ranks = client.get(f"/api/v1/network/jobs/{jid}").json()["ranks"]
    assert set(ranks) == {"0", "1"} and set(ranks["0"]) == {"host", "address", "at"}


def test_a_rank_1_that_never_connects_is_rank_0s_error_result(
        client: TestClient, job: tuple[SimNetwork, int]) -> None:
    """Rank 1 joins and reads the id, then its node never brings NCCL up (here: its thread
    waits on nothing): both give up at their connect limits, rank 0 fails the job saying
    so, and rank 1 ends with the job."""
    net, jid = job
    world = SimNccl(net)
    stuck = threading.Event()

    class Hangs:
        def unique_id(self) -> bytes:
            raise AssertionError("rank 1 never makes the id")

        def connect(self, uid: bytes, rank: int) -> Any:
            stuck.wait()  # released at the end of the test

    try:
        out = run_both(client, jid, lambda: world.transport(A), Hangs,  # type: ignore[arg-type]
                       opts0=NetOptions(connect_limit_s=1.0),
                       opts1=NetOptions(connect_limit_s=1.0))
    finally:
        stuck.set()
    assert out[0]["stored"] == 1, out
    assert out[1]["state"] == "failed"
    pair = stored(client)
    assert pair["verdict"] == "failed"
    assert "TransferTimeout: rank 0: the other rank did not connect within 1 s" in pair["reason"]


def test_a_stalled_transfer_is_aborted_at_both_ends_and_fails_the_job(
        client: TestClient, job: tuple[SimNetwork, int]) -> None:
    net, jid = job
    world = SimNccl(net, stalled={B})
    short = NetOptions(nbytes=1 << 20, warmup=2, iters=5, connect_limit_s=300,
                       step_limit_s=1.0)
    out = run_both(client, jid, lambda: world.transport(A), lambda: world.transport(B),
                   opts0=short)
    assert out[1]["state"] == "failed", out
    assert "warm-up did not finish within 1 s" in stored(client)["reason"]
    assert sorted(world.aborted) == [(A, 0), (B, 1)]


def test_a_node_without_nccl_fails_the_job_saying_why(
        client: TestClient, job: tuple[SimNetwork, int]) -> None:
    """No GPU or NCCL at rank 0: its error result names it; rank 1 ends with the job."""
    _net, jid = job

    def no_gpu() -> NetTransport:
        raise FabricUnavailable("CuPy is not installed (pip install 'peerwatch[gpu]')")

    out = run_both(client, jid, no_gpu, no_gpu)
    assert out[0]["stored"] == 1, out
    assert out[1]["state"] == "failed"
    assert "FabricUnavailable: CuPy is not installed" in stored(client)["reason"]


def test_simnet_still_measures_without_nccl_or_a_rendezvous(
        client: TestClient, job: tuple[SimNetwork, int]) -> None:
    """`--simnet` (the demo, the real-Slurm test): rank 0 posts the simulated figure, rank 1
    waits for it, and neither touches NCCL or the rendezvous."""
    net, jid = job

    def never() -> NetTransport:
        raise AssertionError("--simnet needs no NCCL")

    out = run_both(client, jid, never, never, measure=net.measure)
    assert out[0] == {"stored": 1, "faults": 0} and out[1]["state"] == "done", out
    assert stored(client)["measured_bps"] == pytest.approx(net.measure(A, B))
    r = client.get(f"/api/v1/network/jobs/{jid}/rendezvous", params={"host": B},
                   headers=credential(client, "probe", B))
    assert r.status_code == 200 and r.json()["nccl_id"] is None


class Flaky(Shared):
    """The server as a loaded one looks to a rank: the first answer of each listed request
    (method, path end) never comes; for `lost`, the request is served first and only its
    answer is lost. Counts what reached the server."""

    def __init__(self, inner: httpx.BaseTransport, fail: set[tuple[str, str]],
                 lost: set[tuple[str, str]]) -> None:
        super().__init__(inner)
        self.fail, self.lost = set(fail), set(lost)
        self.served: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        key = next(((m, end) for m, end in self.fail | self.lost
                    if request.method == m and request.url.path.endswith(end)), None)
        if key in self.fail:
            self.fail.discard(key)
            raise httpx.ReadTimeout("no answer in time", request=request)
        response = self.inner.handle_request(request)
        self.served.append(f"{request.method} {request.url.path}")
        if key in self.lost:
            self.lost.discard(key)
            raise httpx.ReadTimeout("answer lost", request=request)
        return response


def test_a_late_or_lost_answer_neither_loses_the_job_nor_stores_twice(
        client: TestClient, job: tuple[SimNetwork, int]) -> None:
    net, jid = job
    token = {h: credential(client, "probe", h)["Authorization"].removeprefix("Bearer ")
             for h in (A, B)}
    flaky = {A: Flaky(client._transport, {("GET", f"/jobs/{jid}"),  # type: ignore[attr-defined]
                                          ("POST", "/ranks")}, {("POST", "/results")}),
             B: Flaky(client._transport, {("POST", "/ranks")}, set())}  # type: ignore[attr-defined]
    out: dict[str, Any] = {}

    def rank(host: str) -> None:
        pc = PairsClient(str(client.base_url), token[host], transport=flaky[host])
        try:
            out[host] = run_rank(pc, jid, host, net.measure)
        except Exception as exc:  # noqa: BLE001 - the test reads it
            out[host] = exc
        finally:
            pc.close()

    threads = [threading.Thread(target=rank, args=(h,)) for h in (A, B)]
    threads[0].start()
    assert eventually(lambda: "0" in client.get(f"/api/v1/network/jobs/{jid}").json()["ranks"])
    threads[1].start()
    for t in threads:
        t.join(timeout=600)
    assert out[A] == {"state": "done"} and out[B]["state"] == "done", out
    assert flaky[A].served.count("POST /api/v1/network/results") == 1  # stored once
    assert not flaky[A].fail and not flaky[A].lost and not flaky[B].fail  # each one happened
    assert stored(client)["measured_bps"] == pytest.approx(net.measure(A, B))
