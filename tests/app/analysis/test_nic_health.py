"""The NIC port judge (pure): counters by their growth, never their size; a reset is growth
from zero; the port's state and rate against its kind on the host."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from peerwatch.app.analysis.nic_health import (
    NicLimits,
    Reading,
    counter_rates,
    judge_nics,
    judged_total,
)
from peerwatch.app.analysis.rates import rate_per_s
from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.nics import NicPort

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def readings(*counters: dict[str, int], state: str = "ACTIVE", rate: float = 400.0,
             step_s: float = 60.0) -> list[Reading]:
    return [Reading(T0 + timedelta(seconds=i * step_s), state, "LinkUp", rate, "InfiniBand", c)
            for i, c in enumerate(counters)]


def judge(ports: dict[tuple[str, int], list[Reading]]) -> dict[str, object]:
    return {j.nic: j for j in judge_nics(ports, {n: "MT4129" for n, _ in ports}, NicLimits())}


def test_lifetime_counters_are_judged_by_growth_not_size() -> None:
    big = {"symbol_error": 5_000, "link_downed": 3, "port_xmit_discards": 9}
    got = judge({("mlx5_0", 1): readings(big, big, big)})
    assert got["mlx5_0"].verdict is Verdict.HEALTHY, got["mlx5_0"].reason
    assert got["mlx5_0"].rates["symbol_error"] == 0.0


def test_a_flap_symbol_errors_and_discards_each_say_so() -> None:
    flap = readings({"link_downed": 0}, {"link_downed": 1})
    errors = readings({"symbol_error": 0}, {"symbol_error": 60})  # 1/s: over 0.01/s
    few = readings({"symbol_error": 0}, {"symbol_error": 0}, {"symbol_error": 1})  # below
    congested = readings({"port_xmit_discards": 0}, {"port_xmit_discards": 30})
    got = judge({("a", 1): flap, ("b", 1): errors, ("c", 1): few, ("d", 1): congested})
    assert got["a"].verdict is Verdict.DEGRADED and "flapping: link_downed" in got["a"].reason
    assert got["b"].findings[0]["kind"] == "link_errors" and "symbol_error +1/s" in got["b"].reason
    assert got["c"].verdict is Verdict.HEALTHY  # 1 in 2 minutes: below the limit
    assert got["d"].findings[0]["kind"] == "congestion"


def test_a_reset_counter_counts_from_zero_not_negative() -> None:
    reset = readings({"symbol_error": 900}, {"symbol_error": 0}, {"symbol_error": 0})
    assert judge({("a", 1): reset})["a"].verdict is Verdict.HEALTHY


def test_a_port_not_active_is_down_and_says_its_physical_state() -> None:
    down = [Reading(T0, "DOWN", "Polling", None, "InfiniBand", {})]
    got = judge({("a", 1): down})["a"]
    assert got.verdict is Verdict.DOWN and "DOWN (physical state Polling)" in got.reason


def test_a_port_below_the_rate_of_its_kind_is_degraded() -> None:
    got = judge({("a", 1): readings({}, rate=200.0), ("b", 1): readings({})})
    assert got["a"].verdict is Verdict.DEGRADED and got["a"].expected_gbps == 400.0
    assert "200 Gb/s, below the 400 Gb/s" in got["a"].reason
    assert got["b"].verdict is Verdict.HEALTHY


def test_one_reading_judges_state_and_rate_but_no_rate_of_growth() -> None:
    got = judge({("a", 1): readings({"symbol_error": 7})})["a"]
    assert got.verdict is Verdict.HEALTHY and got.rates == {"symbol_error": None}


def test_the_total_moves_with_every_judged_input() -> None:
    """ingest's error_total: a counter, a state or a rate change moves it (fast path)."""
    def port(**kw: object) -> NicPort:
        return NicPort(device="a", port=1, **{"state": "ACTIVE", "rate_gbps": 400.0, **kw})
    base = judged_total([port(counters={"symbol_error": 1})])
    assert judged_total([port(counters={"symbol_error": 2})]) != base
    assert judged_total([port(counters={"symbol_error": 1}, state="DOWN")]) != base
    assert judged_total([port(counters={"symbol_error": 1}, rate_gbps=200.0)]) != base
    assert judged_total([port(counters={"symbol_error": 1, "port_rcv_data": 9})]) == base


_point = st.tuples(st.integers(0, 40), st.one_of(st.none(), st.integers(0, 10**6)))


@settings(max_examples=300, deadline=None)
@given(st.lists(_point, max_size=12))
def test_a_ports_rates_are_rate_per_s_of_each_counter(points: list[tuple[int, int | None]]
                                                       ) -> None:
    """The one-pass rates equal `rate_per_s` of the points, readings out of time order,
    repeated times, resets and unread counters included."""
    rs = [Reading(T0 + timedelta(seconds=s * 7), "ACTIVE", "LinkUp", 400.0, "InfiniBand",
                  {} if v is None else {"symbol_error": v, "link_downed": v // 3})
          for s, v in points]
    got = counter_rates(rs)
    for name in got:
        assert got[name] == rate_per_s([(r.at, r.counters.get(name)) for r in rs]), name
    assert set(got) == ({"symbol_error", "link_downed"} if any(r.counters for r in rs)
                        else set())
