"""`measure_pair` (probes/net_transfer.py), both ranks as threads over the simulated NCCL
(probes/sim/simnccl.py): the figure each way, and every way it ends without a hang (the other
rank never connects, a step stalls, the other rank aborts, an init that fails). Limits that
matter here are short only where nothing could finish anyway; healthy steps get minutes."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from peerwatch.probes.errors import TransferError, TransferTimeout
from peerwatch.probes.net_transfer import NetOptions, decode_id, encode_id, measure_pair
from peerwatch.probes.sim.simnccl import SimNccl
from peerwatch.probes.sim.simnet import BadCable, leaf_spine

OPTS = NetOptions(nbytes=1 << 20, warmup=2, iters=5, connect_limit_s=300, step_limit_s=300)


def both_ranks(world: SimNccl, a: str, b: str, opts: NetOptions = OPTS,
               opts1: NetOptions | None = None) -> dict[int, Any]:
    """Each rank's figure or exception, rank 0 on `a`, rank 1 on `b`."""
    uid = world.transport(a).unique_id()
    out: dict[int, Any] = {}

    def rank(r: int, host: str, o: NetOptions) -> None:
        try:
            out[r] = measure_pair(world.transport(host), uid, r, o)
        except Exception as exc:  # noqa: BLE001 - the test reads it
            out[r] = exc

    threads = [threading.Thread(target=rank, args=(0, a, opts)),
               threading.Thread(target=rank, args=(1, b, opts1 or opts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
        assert not t.is_alive(), "a rank hung past every limit"
    return out


@pytest.mark.parametrize("faults", [[], [BadCable("node-2")]], ids=["healthy", "bad-cable"])
def test_each_rank_gets_the_network_figure_each_way(faults: list[BadCable]) -> None:
    net = leaf_spine(1, 2)
    net.faults = list(faults)
    world = SimNccl(net)
    out = both_ranks(world, "node-1", "node-2")
    want = net.measure("node-1", "node-2")
    assert out[0] == pytest.approx(want) and out[1] == pytest.approx(want)
    assert sorted(world.closed) == [("node-1", 0), ("node-2", 1)]
    assert world.aborted == []
    if faults:
        assert want < 0.4 * net.hosts["node-1"].line_rate_bps


def test_a_rank_alone_gives_up_on_the_other_within_the_connect_limit() -> None:
    world = SimNccl(leaf_spine(1, 2))
    uid = world.transport("node-1").unique_id()
    with pytest.raises(TransferTimeout, match="the other rank did not connect within 0.5 s"):
        measure_pair(world.transport("node-1"), uid, 0, NetOptions(connect_limit_s=0.5))


def test_a_stalled_step_aborts_both_ends_and_says_which_step() -> None:
    world = SimNccl(leaf_spine(1, 2), stalled={"node-2"})
    short = NetOptions(nbytes=1 << 20, warmup=2, iters=5, connect_limit_s=300,
                       step_limit_s=0.5)
    out = both_ranks(world, "node-1", "node-2", short, OPTS)
    assert isinstance(out[0], TransferTimeout)
    assert "warm-up did not finish within 0.5 s" in str(out[0])
    # rank 1 (limit 300 s) does not wait out its own limit: rank 0's abort reaches it
    assert isinstance(out[1], TransferError) and "remote rank aborted" in str(out[1])
    assert sorted(world.aborted) == [("node-1", 0), ("node-2", 1)]
    assert world.closed == []


def test_an_init_that_fails_is_a_transfer_error() -> None:
    world = SimNccl(leaf_spine(1, 2))
    with pytest.raises(TransferError, match="no rank 0 made this unique id"):
        measure_pair(world.transport("node-2"), b"\x01" * 128, 1, OPTS)


def test_the_id_travels_as_base64_and_bad_text_is_named() -> None:
    uid = bytes(range(128))
    assert decode_id(encode_id(uid)) == uid
    with pytest.raises(TransferError, match="not base64"):
        decode_id("not base64!")


def test_options_out_of_range_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="iters >= 1"):
        NetOptions(iters=0)
