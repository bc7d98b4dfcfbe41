"""A host's fabric as the wire schema's values (`GpuInfo`, `NvLinkPort`, `PairInfo`, the
same a probe sends) and what each pair should measure with it. Loaded by
`app/queries/fabric.py`; judged by `app/judging/`; kept by its expectation cache.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from peerwatch.app.analysis.all_to_all import A2AFlow, Path, expected_all_to_all
from peerwatch.app.analysis.expected import (
    DEFAULT_NVLINK_SPEED_BPS,
    Expectation,
    at_slot_maximum,
    expected,
    expected_gpu,
    pcie_bps,
    trained_below,
)
from peerwatch.app.store.tables.inventory import Gpu, Host
from peerwatch.probes.report import (
    GpuInfo,
    LinkState,
    NvLinkPort,
    PairInfo,
    RemoteType,
    TestName,
    test_scope,
)
from peerwatch.probes.test_kinds import kind_of

F = TypeVar("F", bound=Callable[..., Any])


def _kept_on_fabric(method: F) -> F:
    """`method`'s results kept on its fabric (`HostFabric._memo`), per method and arguments.
    Not `functools.cache`: that cache belongs to the class's function and keeps every fabric
    it was called on (a new one per judgement, with its host row) alive for good."""
    name = method.__name__

    @functools.wraps(method)
    def kept(self: HostFabric, *args: Any) -> Any:
        key = (name, *args)
        memo = self._memo
        if key not in memo:
            memo[key] = method(self, *args)
        return memo[key]
    return cast(F, kept)


@dataclass(eq=False)
class HostFabric:
    host: Host
    gpus: dict[int, GpuInfo] = field(default_factory=dict)  # in the newest inventory
    missing_gpus: dict[int, Gpu] = field(default_factory=dict)  # seen before, gone now
    nvlinks: list[NvLinkPort] = field(default_factory=list)
    gone_links: list[NvLinkPort] = field(default_factory=list)  # seen before, not now
    pairs: dict[tuple[int, int], PairInfo] = field(default_factory=dict)

    _ports_by_gpu: dict[int, list[NvLinkPort]] | None = field(default=None, init=False,
                                                              repr=False)
    # what `_kept_on_fabric` methods worked out, lives and dies with the fabric (a copy
    # made by `dataclasses.replace` starts empty)
    _memo: dict[tuple[Any, ...], Any] = field(default_factory=dict, init=False, repr=False)

    def links_of(self, gpu: int) -> list[NvLinkPort]:
        if self._ports_by_gpu is None:
            self._ports_by_gpu = {}
            for p in self.nvlinks:
                self._ports_by_gpu.setdefault(p.gpu, []).append(p)
        return self._ports_by_gpu.get(gpu, [])

    @_kept_on_fabric
    def ports_had(self) -> dict[int, int]:
        """NVLink ports per GPU, listed in the newest inventory or before: one it no longer
        lists counts against the design (what NVLinkWidthReduced counts too)."""
        seen: dict[int, set[int]] = defaultdict(set)
        for p in self.nvlinks + self.gone_links:
            seen[p.gpu].add(p.link)
        return {g: len(links) for g, links in seen.items()}

    @_kept_on_fabric
    def fastest_up_link_bps(self, gpu: int) -> float | None:
        up = [p.speed_bps for p in self.links_of(gpu) if p.state is LinkState.UP and p.speed_bps]
        return max(up) if up else None

    def link_speed_bps(self, src: int, dst: int) -> float | None:
        """Per-link rate the pair's NVLinks run at: the slower GPU's fastest active link."""
        speeds = [s for g in (src, dst) if (s := self.fastest_up_link_bps(g)) is not None]
        return min(speeds) if speeds else None

    @_kept_on_fabric
    def expectation(self, test: TestName, src: int, dst: int) -> Expectation | None:
        """What the pair should reach with the NVLinks it has up now; for a per-GPU test
        (stored as src == dst) what the GPU's PCIe link offers."""
        if kind_of(test).expect.model == "all_to_all":
            return self._all_to_all(test, src, full=False) if src == dst else None
        if test_scope(test) == "gpu":
            gpu = self.gpus.get(src)
            return expected_gpu(test, gpu) if gpu is not None and src == dst else None
        pair = self.pairs.get((src, dst))
        if pair is None or src not in self.gpus or dst not in self.gpus:
            return None
        return expected(test, pair, self.gpus[src], self.gpus[dst],
                        self.link_speed_bps(src, dst))

    @_kept_on_fabric
    def full_width(self, src: int, dst: int) -> tuple[int, bool]:
        """(NVLinks the pair has when every port it has been seen with is up, behind
        NVSwitch?): the smaller port count of the two GPUs behind NVSwitch, the ports
        joining them when direct."""
        ports = [p for p in self.nvlinks + self.gone_links if p.gpu in (src, dst)]
        if any(p.remote_type is RemoteType.NVSWITCH for p in ports):
            counts = [sum(1 for p in ports if p.gpu == g
                          and p.remote_type is RemoteType.NVSWITCH) for g in (src, dst)]
            return min(counts), True
        return sum(1 for p in ports if p.gpu == src and p.remote_gpu == dst), False

    @_kept_on_fabric
    def full_expectation(self, test: TestName, src: int, dst: int) -> Expectation | None:
        """What the pair should reach at its full NVLink width, saying how many links are up
        when some are not: lost links show their cost instead of lowering the bar."""
        if kind_of(test).expect.model == "all_to_all":
            return self._all_to_all(test, src, full=True) if src == dst else None
        now = self.expectation(test, src, dst)
        pair = self.pairs.get((src, dst))
        if now is None or pair is None:
            return now
        full, switched = self.full_width(src, dst)
        if full <= pair.nvlink_width:
            return self._at_pcie_maximum(test, pair, now)
        speed = self.link_speed_bps(src, dst) or self._seen_speed(src, dst)
        whole = pair.model_copy(update={"nvlink_width": full, "topology": f"NV{full}",
                                        "via_nvswitch": switched})
        best = expected(test, whole, self.gpus[src], self.gpus[dst], speed)
        if best is None:
            return now
        up = f"{pair.nvlink_width}/{full} links up now"
        return Expectation(best.value, best.unit, f"{best.basis}; {up}")

    def _at_pcie_maximum(self, test: TestName, pair: PairInfo,
                         now: Expectation) -> Expectation:
        """A path over PCIe judged at what the slots offer, saying how the links trained when
        one trained below: a GPU at x4 of x16 shows its cost on every pair through it."""
        src, dst = self.gpus[pair.src], self.gpus[pair.dst]
        below = [f"GPU{g.index} {b}" for g in (src, dst) if (b := trained_below(g))]
        if not below:
            return now
        best = expected(test, pair, at_slot_maximum(src), at_slot_maximum(dst),
                        self.link_speed_bps(pair.src, pair.dst))
        if best is None or best.value == now.value:
            return now  # NVLink or latency: the PCIe link is not on the path's figure
        return Expectation(best.value, best.unit,
                           f"{best.basis}; trained {', '.join(below)} now")

    def _all_to_all(self, test: TestName, gpu: int, *, full: bool) -> Expectation | None:
        """What `gpu` should send in an all-to-all over every GPU of the host
        (`analysis/all_to_all.py`): with the NVLinks up now, or (`full`) at every pair's
        full width and each PCIe link at its slot's maximum, so lost links show their cost."""
        flows = []
        for (a, b), pair in self.pairs.items():
            if a not in self.gpus or b not in self.gpus:
                continue
            width, switched = self.full_width(a, b) if full else (
                pair.nvlink_width, pair.via_nvswitch)
            ends = [at_slot_maximum(self.gpus[g]) if full else self.gpus[g] for g in (a, b)]
            speed = (self.link_speed_bps(a, b) or self._seen_speed(a, b)
                     or DEFAULT_NVLINK_SPEED_BPS)
            path: Path = ("staged" if pair.can_access_peer is False else
                    ("nvswitch" if switched else "direct") if width else "pcie")
            flows.append(A2AFlow(a, b, path, width * speed, pcie_bps(ends[0]),
                                 pcie_bps(ends[1])))
        found = expected_all_to_all(test, gpu, flows)
        if found is None or not full:
            return found
        now = self.expectation(test, gpu, gpu)
        if now is not None and now.value < found.value * 0.999:
            return Expectation(found.value, found.unit,
                               f"{found.basis}; {now.value / 1e9:.1f} GB/s with the links "
                               "up now")
        return found

    def _seen_speed(self, src: int, dst: int) -> float | None:
        speeds = [p.speed_bps for p in self.gone_links if p.gpu in (src, dst) and p.speed_bps]
        return min(speeds) if speeds else None
