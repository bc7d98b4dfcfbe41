"""The pure domain roll-up (app/analysis/domains.py, clique_fit.py) on hand-made trays: ids,
verdict rules and the tray picking, without a database."""

from __future__ import annotations

import pytest

from peerwatch.app.analysis.clique_fit import fit_cliques
from peerwatch.app.analysis.domains import MemberGpu, Tray, domain_key, roll_up
from peerwatch.app.analysis.verdict import Verdict

H, D, X = Verdict.HEALTHY, Verdict.DEGRADED, Verdict.DOWN


def tray(host: str, *verdicts: Verdict, clique: int = 1, stale: bool = False,
         host_verdict: Verdict | None = None) -> Tray:
    gpus = tuple(MemberGpu(host, i, clique, "completed", "success", "healthy", (), v, v.value)
                 for i, v in enumerate(verdicts))
    worst = max(verdicts, key=lambda v: [H, D, X].index(v))
    return Tray(host, host_verdict or worst, "", stale, gpus)


@pytest.mark.parametrize(("raw", "key"), [
    ("5C3C1C9B-2F7E-5A41-A1D0-B6C7E8F90123", "5c3c1c9b2f7e5a41a1d0b6c7e8f90123"),
    ("5c3c1c9b2f7e5a41a1d0b6c7e8f90123", "5c3c1c9b2f7e5a41a1d0b6c7e8f90123"),
    ("00000000-0000-0000-0000-000000000000", None), (None, None), ("", None),
    ("not a uuid", None), ("5c3c1c9b2f7e5a41a1d0b6c7e8f9012", None),
])
def test_domain_key(raw: str | None, key: str | None) -> None:
    assert domain_key(raw) == key


def test_every_tray_down_is_down_and_names_no_span() -> None:
    r = roll_up("d", [tray("a", X, X), tray("b", X, X)])
    assert r.verdict is X and r.largest_healthy is None
    assert r.reason.endswith("no tray of any clique is wholly healthy")


def test_one_degraded_gpu_keeps_its_tray_out_of_the_span_but_its_good_gpus_schedulable() -> None:
    r = roll_up("d", [tray("a", H, H), tray("b", H, D)])
    assert r.verdict is D and r.cliques[0].job_span == ("a",)
    (fit,), misses = fit_cliques([r], 3)
    assert [(p.host, p.gpus) for p in fit.picks] == [("a", (0, 1)), ("b", (0,))]
    assert misses == []


def test_a_stale_tray_offers_nothing() -> None:
    r = roll_up("d", [tray("a", H, H), tray("b", H, H, stale=True)])
    assert r.cliques[0].healthy_gpus == 2 and r.cliques[0].job_span == ("a",)
    assert "1 of 2 trays stale or not judged (b)" in r.reason


def test_fit_needs_at_least_one_gpu() -> None:
    with pytest.raises(ValueError, match="at least one GPU"):
        fit_cliques([], 0)
