"""The driver's verdicts judged with actions (app/analysis/gpu_health.py): pure."""

from __future__ import annotations

from peerwatch.app.analysis.fabric_health import GpuJudgement
from peerwatch.app.analysis.gpu_health import (
    AER_CORRECTABLE_PER_S,
    driver_facts,
    driver_findings,
    with_driver_verdicts,
)
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.gpu_health import EccCounts, GpuDriverHealth, RowRemap

HEALTHY = GpuDriverHealth(recovery_action="none", ecc=EccCounts(volatile_uncorrected=0),
                          row_remap=RowRemap(), unread={"retired_pages": "not supported: x"})


def _kinds(health: GpuDriverHealth | None, aer: dict[str, float | None] | None = None
           ) -> list[tuple[str, Verdict]]:
    return [(f.kind, f.verdict) for f in driver_findings(health, aer or {})]


def test_a_healthy_gpu_and_one_never_read_have_no_finding() -> None:
    assert _kinds(HEALTHY) == [] and _kinds(None) == []
    assert _kinds(GpuDriverHealth(unread={"ecc": "not supported: ECC off"})) == []


def test_each_recovery_action_is_down_with_the_drivers_words() -> None:
    for action in ("gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset",
                   "recover_imex_domain", "bus_reset", "system_reboot", "action_9"):
        (f,) = driver_findings(HEALTHY.model_copy(update={"recovery_action": action}), {})
        assert (f.kind, f.verdict) == ("recovery_action", Verdict.DOWN)
        assert action.upper() in f.words and f.action
    (drain,) = driver_findings(HEALTHY.model_copy(update={"recovery_action": "drain_p2p"}), {})
    assert "pairs are left out of the scheduler answer" in drain.action


def test_memory_findings_and_their_order() -> None:
    pending = HEALTHY.model_copy(update={"row_remap": RowRemap(corrected_rows=1, pending=True)})
    assert _kinds(pending) == [("row_remap_pending", Verdict.DEGRADED)]
    assert "reset the GPU when idle" in driver_findings(pending, {})[0].action
    failed = HEALTHY.model_copy(update={"row_remap": RowRemap(pending=True, failure=True),
                                        "ecc": EccCounts(volatile_uncorrected=2)})
    assert _kinds(failed) == [("row_remap_failure", Verdict.DOWN),
                              ("ecc_uncorrected", Verdict.DOWN)]  # a failed remap: not pending
    assert all("replace the GPU" in f.action for f in driver_findings(failed, {}))


def test_aer_by_rate_as_link_errors_are() -> None:
    assert _kinds(HEALTHY, {"correctable": AER_CORRECTABLE_PER_S}) == []  # at the limit
    assert _kinds(HEALTHY, {"correctable": 0.5}) == [("aer", Verdict.DEGRADED)]
    assert _kinds(HEALTHY, {"nonfatal": 0.001}) == [("aer", Verdict.DEGRADED)]
    assert _kinds(HEALTHY, {"fatal": 0.001, "correctable": 0.5}) == [("aer", Verdict.DOWN)]
    assert _kinds(HEALTHY, {"fatal": None, "correctable": 0.0}) == []
    (f,) = driver_findings(HEALTHY, {"correctable": 0.5})
    assert "correctable 0.5/s" in f.words


def test_findings_worsen_a_verdict_and_keep_a_worse_one() -> None:
    healthy = GpuJudgement(Verdict.HEALTHY, "GPU1 healthy", 1)
    down = GpuJudgement(Verdict.DOWN, "GPU2 missing", 2)
    pending = driver_findings(HEALTHY.model_copy(update={"row_remap": RowRemap(pending=True)}),
                              {})
    out = with_driver_verdicts([healthy, down], {1: pending, 2: pending})
    assert out[0].verdict is Verdict.DEGRADED and out[0].reason.startswith("GPU1 row remap")
    assert out[1].verdict is Verdict.DOWN and out[1].reason.startswith("GPU2 missing; GPU2 row")
    assert driver_facts(pending)["findings"][0]["kind"] == "row_remap_pending"
