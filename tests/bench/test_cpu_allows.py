"""bench/overload.py's "what the server's CPU allows": the cores the server side had (its
own use plus the idle ones, never the bench client's) over what one sweep costs alone."""

from __future__ import annotations

import os

import pytest

from bench.overload import cpu_allows


def test_a_server_using_every_core_it_had_at_the_alone_cost_scores_one() -> None:
    cores = os.cpu_count() or 1
    # the whole machine busy: the server side used all of it at 50 ms a sweep
    out = cpu_allows(accepted_per_s=cores * 20.0, alone_ms=50.0, idle=0.0,
                     server_cores=float(cores))
    assert out["burst_cpu_allows_per_s"] == pytest.approx(cores * 20.0)
    assert out["burst_vs_cpu_allows"] == pytest.approx(1.0)


def test_the_clients_cores_are_not_the_servers_and_idle_ones_are() -> None:
    cores = os.cpu_count() or 1
    # a quarter of the machine idle, the client used half a core, the server the rest
    server = cores * 0.75 - 0.5
    out = cpu_allows(accepted_per_s=10.0, alone_ms=100.0, idle=0.25, server_cores=server)
    assert out["burst_other_cores"] == pytest.approx(0.5)
    assert out["burst_cpu_allows_per_s"] == pytest.approx((cores - 0.5) * 10.0)
    assert out["burst_vs_cpu_allows"] == pytest.approx(10.0 / ((cores - 0.5) * 10.0))


def test_no_idle_figure_gives_no_ratio_rather_than_a_made_up_one() -> None:
    out = cpu_allows(accepted_per_s=10.0, alone_ms=100.0, idle=None, server_cores=1.0)
    assert out["burst_vs_cpu_allows"] is None
