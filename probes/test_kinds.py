"""Every transfer test kind, declared once: what it names, costs, should reach and is called.

Each row says everything the rest of peerwatch needs to know about a kind, so a new kind is
one row here plus its real measurement in `probes/nvidia/`: the wire schema (`TestName`,
`unit_of`, `test_scope`), the default budgets, the simulator, the server's expectation and
judging, the `/api/v1/tests` catalogue and the dashboard (which draws from that catalogue)
all read this table instead of keeping their own list.

Readers look rows up through `kinds()` and `kind_of()` at call time, never by binding
`TEST_KINDS` at import, so that a kind declared at run time (a test replaces `TEST_KINDS`
with a longer tuple) is seen everywhere.

The budgets were tuned on the lent 2 x H200 pair (`probes/budgets.py` has the table of
ratios); the efficiencies are measured, not datasheet (`app/analysis/expected.py` says where).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

MiB = 1 << 20

Scope = Literal["pair", "gpu", "set", "host_pair"]
ExpectModel = Literal["copy", "latency", "staged", "host_copy", "nic", "all_to_all", "none"]
SimModel = Literal["copy", "sm_copy", "staged", "latency", "host_copy", "local_copy",
                   "allreduce", "nic_loopback", "all_to_all"]

STAGED_EFFICIENCY = 0.60  # through pinned host memory: D2H then H2D, overlapped
STAGED_BIDIR_EFFICIENCY = 0.83  # both ways staged: 52.3 GB/s total over PCIe 5 x16 (measured)


class Unit(StrEnum):
    BYTES_PER_SECOND = "B/s"
    SECONDS = "s"


@dataclass(frozen=True)
class Cost:
    """A kind's default budget, in the fields of `probes.budgets.Budget`."""

    bytes_per_copy: int
    copies: int
    samples: int = 3
    warmup: int = 1


@dataclass(frozen=True)
class Expect:
    """Which expectation model the server judges a kind by, and with what efficiency.

    copy: NVLink width x link rate x `nvlink`, or the PCIe floor x `pcie` on a PCIe P2P path;
    all_to_all: what one GPU sends to all the others at once (`app/analysis/all_to_all.py`),
    each flow at its path's rate x `nvlink` or `pcie`, flows sharing a link sharing it;
    staged: always through host memory; latency: a healthy path's pointer-chase time;
    host_copy: the GPU's own PCIe link x `host`; nic: the line rate of the GPU's nearest RDMA
    NIC (or its PCIe link, if slower) x `nic`; none: judged against its own baseline only.
    `staged` is the efficiency when P2P is unavailable and the copy goes through host.
    """

    model: ExpectModel
    nvlink: float | None = None
    pcie: float | None = None
    staged: float = STAGED_EFFICIENCY
    host: float | None = None
    nic: float | None = None


@dataclass(frozen=True)
class Sim:
    """How the simulator measures a kind: its model, the calibration entry it reads (its own
    name unless `calibrated_as` names another) and how many directions it moves at once."""

    model: SimModel
    calibrated_as: str | None = None
    ways: int = 1
    # a joint test whose GPU's time ends only when its receives have landed too (NCCL's
    # all-to-all kernel), not when its own sends have (copy engines)
    both_ends: bool = False


@dataclass(frozen=True)
class TestKind:
    """One transfer test kind. `label` is the dashboard's short column title (None: its
    name); `about` says what it measures, for people."""

    __test__ = False  # not a pytest class

    name: str
    scope: Scope
    unit: Unit
    budget: Cost
    expect: Expect
    sim: Sim
    about: str
    label: str | None = None
    # One run over every selected GPU at once that gives one result per GPU (all-to-all):
    # planned once per sweep, not once per GPU, though each GPU's figure is judged alone.
    joint: bool = False
    # Run only when asked for (`--tests`, PEERWATCH_PROBE_OPT_IN_TESTS, or NVLS all-reduce by
    # `probes/config.py`'s `nvls`: multicast stays off by default), never by default: it puts
    # traffic where jobs may be (a NIC port), or needs what few hosts have.
    opt_in: bool = False

    @property
    def calibration(self) -> str:
        return self.sim.calibrated_as or self.name

    @property
    def peer_to_peer(self) -> bool:
        """Does it copy directly between GPUs, so that P2P failing fails it (not staged
        through host, not NCCL's own transport)?"""
        return self.scope in ("pair", "gpu") and self.sim.model != "staged"

    @property
    def both_ways(self) -> bool:
        """Does its traffic travel both ways over a pair's links (a bidirectional copy; a
        pointer chase, whose loaded data comes back)?"""
        return self.sim.ways == 2 or self.sim.model == "latency"


_BPS, _S = Unit.BYTES_PER_SECOND, Unit.SECONDS
_CE = Cost(256 * MiB, copies=2, samples=2)
_SM = Cost(128 * MiB, copies=3)
_PCIE = Cost(8 * MiB, copies=2)  # host <-> GPU: a tenth of NVLink's speed, small buffers
_CE_EXPECT = Expect("copy", nvlink=0.83, pcie=0.80)
_SM_EXPECT = Expect("copy", nvlink=0.775, pcie=0.70)
_HOST_EXPECT = Expect("host_copy", host=0.88)

# In the order of `TestName` (the wire schema's enum): tests/probes/test_test_kinds.py checks.
TEST_KINDS: tuple[TestKind, ...] = (
    TestKind("ce_write", "pair", _BPS, _CE, _CE_EXPECT, Sim("copy"),
             "copy engine, issued by the source (push)"),
    TestKind("ce_read", "pair", _BPS, _CE, _CE_EXPECT, Sim("copy"),
             "copy engine, issued by the destination (pull)"),
    TestKind("ce_bidir", "pair", _BPS, Cost(192 * MiB, copies=2),  # two buffers per GPU
             Expect("copy", nvlink=2 * 0.815, pcie=2 * 0.75, staged=STAGED_BIDIR_EFFICIENCY),
             Sim("copy", ways=2), "copy engine, both directions at once (total of both)"),
    TestKind("sm_write", "pair", _BPS, _SM, _SM_EXPECT, Sim("sm_copy"),
             "copy kernel on the source storing into the destination"),
    TestKind("sm_read", "pair", _BPS, _SM, _SM_EXPECT, Sim("sm_copy"),
             "copy kernel on the destination loading from the source"),
    TestKind("latency", "pair", _S, Cost(2 * MiB, copies=1000, warmup=100),
             Expect("latency"), Sim("latency"),
             "pointer chase by the source over the destination's memory"),
    TestKind("staged", "pair", _BPS, Cost(16 * MiB, copies=2), Expect("staged"),
             Sim("staged"), "P2P off: staged through pinned host memory"),
    TestKind("allreduce", "set", _BPS, Cost(64 * MiB, copies=4),
             Expect("copy", nvlink=0.69, pcie=0.60), Sim("allreduce"),
             "NCCL all-reduce, bus bandwidth"),
    TestKind("h2d", "gpu", _BPS, _PCIE, _HOST_EXPECT, Sim("host_copy"),
             "host to GPU: copy engine from pinned memory on the GPU's NUMA node",
             label="host → GPU"),
    TestKind("d2h", "gpu", _BPS, _PCIE, _HOST_EXPECT, Sim("host_copy"),
             "GPU to host: copy engine into pinned memory on the GPU's NUMA node",
             label="GPU → host"),
    TestKind("local", "gpu", _BPS, Cost(192 * MiB, copies=3), Expect("none"),
             Sim("local_copy"), "within the GPU: copy engine, read + write counted once",
             label="within GPU"),
    # GPUDirect RDMA measured (docs/network.md): the GPU's memory written through its
    # nearest RDMA NIC and back into it (ib_write_bw --use_cuda over the NIC's own port).
    # The efficiency is perftest's usual share of a 400G NDR port (about 48 of 50 GB/s),
    # not yet measured here: no lent machine has an RDMA NIC.
    TestKind("gdr_loopback", "gpu", _BPS, Cost(8 * MiB, copies=16), Expect("nic", nic=0.85),
             Sim("nic_loopback"), "GPUDirect RDMA: GPU memory through its nearest NIC and "
             "back (loopback), against the NIC's line rate", label="GPU ⇄ NIC", opt_in=True),
    # All-to-all (MoE token routing): every GPU sends one buffer to every other GPU at once;
    # each GPU's figure is what it sent to its peers over its own time. `bytes_per_copy` is
    # one flow's buffer (per peer). Efficiencies: provisional, not yet measured on a
    # multi-GPU host (docs/probe-tests.md says so; bench/gpu/all_to_all.py measures them).
    TestKind("a2a_ce", "gpu", _BPS, Cost(32 * MiB, copies=2),
             Expect("all_to_all", nvlink=0.75, pcie=0.70), Sim("all_to_all", "ce_write"),
             "all-to-all by copy engines: each GPU sends to every other GPU at once (what it "
             "sent, per second)", label="all-to-all CE", joint=True),
    TestKind("a2a_nccl", "gpu", _BPS, Cost(16 * MiB, copies=4),
             Expect("all_to_all", nvlink=0.70, pcie=0.60),
             Sim("all_to_all", "ce_write", both_ends=True),
             "NCCL all-to-all (grouped send/recv): what each GPU sent to its peers, per second",
             label="all-to-all NCCL", joint=True),
    TestKind("nvls_allreduce", "set", _BPS, Cost(64 * MiB, copies=4),
             Expect("copy", nvlink=0.69, pcie=0.60), Sim("allreduce"),
             "NCCL all-reduce over NVLink SHARP (multicast), bus bandwidth; opt-in",
             label="NVLS all-reduce", opt_in=True),
    # Cross-host (schema 5): run by a scheduler job on two idle nodes, never by a host's own
    # sweep; `src` on the reporting host, `dst` on `peer_host`; judged by app/analysis/network.py
    # against the network map (NIC line rate), its baseline and its fleet peers.
    TestKind("net_write", "host_pair", _BPS, _CE, Expect("none"),
             Sim("copy", calibrated_as="ce_write"),
             "GPU memory to a GPU on another host over the network (NCCL send/recv)",
             label="host → host"),
)

_index: tuple[tuple[TestKind, ...], dict[str, TestKind]] = ((), {})


def kinds() -> tuple[TestKind, ...]:
    """Every declared kind, in order (read at call time: see the module's docstring)."""
    return TEST_KINDS


def kind_of(name: str) -> TestKind:
    """The row of the kind called `name`; KeyError when none is declared."""
    global _index
    table, by_name = _index
    if table is not TEST_KINDS:
        by_name = {k.name: k for k in TEST_KINDS}
        _index = (TEST_KINDS, by_name)
    return by_name[name]


def default_kinds(opted_in: Collection[str] = ()) -> tuple[TestKind, ...]:
    """The kinds a sweep runs unless told otherwise: every kind but the opt-in ones, which
    run only where the operator named them (`opted_in`: nvls_allreduce by the probe's `nvls`,
    gdr_loopback by its `opt_in_tests`)."""
    return tuple(k for k in TEST_KINDS if not k.opt_in or k.name in opted_in)


def declared(name: str) -> bool:
    try:
        kind_of(name)
    except KeyError:
        return False
    return True
