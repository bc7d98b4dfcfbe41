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

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

MiB = 1 << 20

Scope = Literal["pair", "gpu", "set"]
ExpectModel = Literal["copy", "latency", "staged", "host_copy", "none"]
SimModel = Literal["copy", "sm_copy", "staged", "latency", "host_copy", "local_copy",
                   "allreduce"]

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
    staged: always through host memory; latency: a healthy path's pointer-chase time;
    host_copy: the GPU's own PCIe link x `host`; none: judged against its own baseline only.
    `staged` is the efficiency when P2P is unavailable and the copy goes through host.
    """

    model: ExpectModel
    nvlink: float | None = None
    pcie: float | None = None
    staged: float = STAGED_EFFICIENCY
    host: float | None = None


@dataclass(frozen=True)
class Sim:
    """How the simulator measures a kind: its model, the calibration entry it reads (its own
    name unless `calibrated_as` names another) and how many directions it moves at once."""

    model: SimModel
    calibrated_as: str | None = None
    ways: int = 1


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

    @property
    def calibration(self) -> str:
        return self.sim.calibrated_as or self.name

    @property
    def peer_to_peer(self) -> bool:
        """Does it copy directly between GPUs, so that P2P failing fails it (not staged
        through host, not NCCL's own transport)?"""
        return self.scope != "set" and self.sim.model != "staged"

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


def declared(name: str) -> bool:
    try:
        kind_of(name)
    except KeyError:
        return False
    return True
