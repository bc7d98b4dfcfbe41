"""The judge lag of a stretch of a run, from two readings of a replica's histogram: only the
judgements made in between count (a warm-up's backlog before them does not)."""

from __future__ import annotations

from bench.helpers.judge_lag import lag_quantile

INF = float("inf")


def test_only_the_judgements_between_the_readings_count() -> None:
    # before: a warm-up's backlog, 1000 judgements of up to 60 s
    before = {0.5: 100.0, 5.0: 300.0, 60.0: 1000.0, INF: 1000.0}
    # then 200 more, 199 within 0.5 s and one of 30 s
    after = {0.5: 299.0, 5.0: 499.0, 60.0: 1200.0, INF: 1200.0}
    assert lag_quantile(before, after, 0.99) == 0.5
    assert lag_quantile(before, after, 0.999) == 60.0
    assert lag_quantile({}, after, 0.99) == 60.0  # the whole run: the backlog dominates


def test_no_judgement_between_is_no_figure_and_beyond_the_last_bound_is_inf() -> None:
    same = {0.5: 3.0, INF: 3.0}
    assert lag_quantile(same, same) is None
    assert lag_quantile({0.5: 0.0, INF: 0.0}, {0.5: 0.0, INF: 5.0}) == INF
