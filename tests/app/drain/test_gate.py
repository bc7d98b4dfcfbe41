"""What the prolog's gate refuses at once: a GPU missing or down now, whatever its age (no
debounce); while the host settles after a start only a missing GPU (links still train)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from peerwatch.app.drain.facts import AlertFact, GpuFact, NodeFacts
from peerwatch.app.drain.gate import hard_faults
from peerwatch.app.drain.policy import Policy

NOW = datetime(2026, 12, 1, 3, 12, tzinfo=UTC)
DOWN = GpuFact(5, "down", "GPU5: all 18 NVLinks down", NOW)
DEGRADED = GpuFact(1, "degraded", "GPU1: 16/18 NVLinks up", NOW - timedelta(hours=1))
MISSING = AlertFact("GPUMissing", "GPU3 is missing from n", NOW, 3)


def facts(*gpus: GpuFact, alerts: tuple = (), started: datetime | None = None) -> NodeFacts:
    return NodeFacts("n", "degraded", "", NOW, gpus_total=8, gpus=gpus, alerts=alerts,
                     started_at=started)


def test_a_gpu_down_or_missing_now_is_refused_without_the_debounce() -> None:
    found = hard_faults(Policy(), facts(DOWN, alerts=(MISSING,)), NOW)
    assert [f.kind for f in found] == ["gpu_missing", "gpu_down"]
    assert hard_faults(Policy(), facts(DEGRADED), NOW) == []  # degraded: the drain's, not gating
    assert hard_faults(Policy(gpu_down=False), facts(DOWN), NOW) == []  # as the policy counts


def test_while_settling_only_a_missing_gpu_is_refused() -> None:
    started = NOW - timedelta(seconds=60)
    found = hard_faults(Policy(), facts(DOWN, alerts=(MISSING,), started=started), NOW)
    assert [f.kind for f in found] == ["gpu_missing"]
    later = NOW + timedelta(seconds=Policy().settle_after_boot_s)
    assert len(hard_faults(Policy(), facts(DOWN, started=started), later)) == 1
