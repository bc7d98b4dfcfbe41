"""Everything judged about one host, as the judges' own values: what judging writes
(`app/judging/write.py`) and what every reader gets back from the stored rows
(`app/queries/health.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from peerwatch.app.analysis.fabric_health import GpuJudgement, HostJudgement
from peerwatch.app.analysis.health import PairJudgement, TestJudgement
from peerwatch.app.analysis.xid_judge import EventFinding
from peerwatch.app.records.fabric import HostFabric
from peerwatch.app.records.keys import PairKey
from peerwatch.app.store.tables.inventory import Host


@dataclass
class HostHealth:
    """Everything judged about one host. `judgement` carries the GPU/link/pair verdicts;
    `since` maps (kind, *key) — ("gpu", 3), ("test", 0, 1, "ce_write") — to when the object
    entered its current verdict."""

    host: Host
    fabric: HostFabric
    judgement: HostJudgement
    tests: dict[PairKey, TestJudgement] = field(default_factory=dict)
    stale: bool = False
    generated_at: datetime | None = None
    since: dict[tuple, datetime] = field(default_factory=dict)
    link_facts: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    # fleet peers (docs/fleet-peers.md): each pair's worst check, the host's standing, and
    # when the peer stats it was judged against last changed
    pair_facts: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    gpu_facts: dict[int, dict[str, Any]] = field(default_factory=dict)  # a GPU's own tests
    peers: dict[str, Any] = field(default_factory=dict)
    # each RDMA NIC port's verdict, reason, findings, rates and newest counters
    # (app/analysis/nic_health.py NicPortJudgement.as_dict), stored in the host's facts
    nics: list[dict[str, Any]] = field(default_factory=list)
    # what the next judgement goes on from (app/judging/running.py): each (pair, test)'s
    # running state, and the newest report judged
    test_states: dict[PairKey, bytes] = field(default_factory=dict)  # packed.py
    judged_report: int | None = None
    # the host's recent Xid/SXid events as the judgement just judged them (the alert rules
    # evaluated in its transaction go on from them); None: read from storage, not judged
    events: list[EventFinding] | None = None

    @property
    def gpus(self) -> tuple[GpuJudgement, ...]:
        return self.judgement.gpus

    def pair(self, src: int, dst: int) -> PairJudgement | None:
        """The stored verdict of the ordered pair src -> dst, if judged."""
        return next((p for p in self.judgement.pairs if (p.src, p.dst) == (src, dst)), None)
