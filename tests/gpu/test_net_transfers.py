"""`net_write` on real GPUs (probes/nvidia/net_transfers.py): two processes, one GPU each,
NCCL forced onto its network transport (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1), which is how
one multi-GPU host stands in for two nodes; the id goes through a file instead of the server.
Skipped (never failed) where CuPy, NCCL or two GPUs are missing. It has not run here: no GPU
(docs/network.md).

Plausibility bounds only: NCCL over sockets on one host is far below an NDR NIC and far
above nothing; the data each rank received is checked on the device (`check`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from peerwatch.probes.errors import FabricUnavailable, TransferTimeout
from peerwatch.probes.net_transfer import NetOptions, measure_pair

RANK = """
import json, sys, time
from pathlib import Path
from peerwatch.probes.net_transfer import NetOptions, decode_id, encode_id, measure_pair
from peerwatch.probes.nvidia.net_transfers import NcclNet
rank, path = int(sys.argv[1]), Path(sys.argv[2])
net = NcclNet(0)
if rank == 0:
    uid = net.unique_id()
    path.with_suffix(".tmp").write_text(encode_id(uid))
    path.with_suffix(".tmp").rename(path)
else:
    deadline = time.monotonic() + 120
    while not path.exists():
        if time.monotonic() > deadline:
            sys.exit("rank 0 never wrote the id")
        time.sleep(0.05)
    uid = decode_id(path.read_text())
opts = NetOptions(nbytes=64 << 20, warmup=3, iters=10, connect_limit_s=120, step_limit_s=120)
print(json.dumps({"rank": rank, "bps": measure_pair(net, uid, rank, opts)}))
"""


def _gpus() -> int:
    cupy = pytest.importorskip("cupy")
    try:
        from peerwatch.probes.nvidia.transfers import load_nccl

        load_nccl()
        return int(cupy.cuda.runtime.getDeviceCount())
    except FabricUnavailable as exc:
        pytest.skip(f"no CUDA with NCCL here: {exc}")


def test_two_ranks_move_gpu_memory_over_nccls_network_transport(tmp_path: Path) -> None:
    if _gpus() < 2:
        pytest.skip("two GPUs needed (one per rank)")
    env = {**os.environ, "NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1",
           "NCCL_NVLS_ENABLE": "0"}
    ranks = [subprocess.Popen([sys.executable, "-c", RANK, str(r), str(tmp_path / "id")],
                              env={**env, "CUDA_VISIBLE_DEVICES": str(r)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in (0, 1)]
    outs = [p.communicate(timeout=400) for p in ranks]
    for p, (_out, err) in zip(ranks, outs, strict=True):
        assert p.returncode == 0, err[-4000:]
    figures = [json.loads(out.strip().splitlines()[-1])["bps"] for out, _ in outs]
    for bps in figures:
        assert 1e8 < bps < 1e12, f"{bps / 1e9:.2f} GB/s each way"
    assert 0.5 < figures[0] / figures[1] < 2.0  # one exchange, timed at both ends


def test_a_rank_alone_gives_up_within_its_limit() -> None:
    if _gpus() < 1:
        pytest.skip("no GPU")
    from peerwatch.probes.nvidia.net_transfers import NcclNet

    net = NcclNet(0)
    with pytest.raises(TransferTimeout, match="did not connect within 5 s"):
        measure_pair(net, net.unique_id(), 0, NetOptions(connect_limit_s=5))


def test_the_id_through_the_wire_opens_a_communicator_on_one_gpu() -> None:
    """The id's whole path but the second node: made by NCCL, base64 on the wire as the
    server hands it over, back to bytes, taken by this CuPy's NcclCommunicator in one of the
    forms `connect` tries (a one-rank communicator, so one GPU is enough)."""
    if _gpus() < 1:
        pytest.skip("no GPU")
    from peerwatch.probes.net_transfer import decode_id, encode_id
    from peerwatch.probes.nvidia.net_transfers import NcclNet

    net = NcclNet(0)
    uid = net.unique_id()
    assert len(uid) == 128 and decode_id(encode_id(uid)) == uid  # NCCL_UNIQUE_ID_BYTES
    comm = net.connect(decode_id(encode_id(uid)), 0, ranks=1)
    try:
        assert comm.comm.rank_id() == 0 and comm.comm.size() == 1
    finally:
        comm.close()
