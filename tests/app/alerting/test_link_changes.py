"""A port's link-state history as stored (the host page marks link down/up on its
charts from it, not only from link alerts): every change between down and up, dated by the
judgement that saw it, kept after the flap window has forgotten the downs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from peerwatch.app.analysis.flaps import MAX_CHANGES, state_changes
from peerwatch.app.queries.health import host_health
from peerwatch.app.queries.health_view import health_view
from peerwatch.probes.sim.faults import LinksDown
from tests.app.alerting.simhost import SimHost

T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


def test_a_change_is_recorded_only_when_the_state_flips() -> None:
    down = state_changes([], was_down=False, is_down=True, now=T0)
    assert down == [[T0.isoformat(), "down"]]
    assert state_changes(down, was_down=True, is_down=True, now=T0 + timedelta(minutes=1)) == down
    later = T0 + timedelta(minutes=2)
    assert state_changes(down, was_down=True, is_down=False, now=later) == [
        [T0.isoformat(), "down"], [later.isoformat(), "up"]]


def test_only_the_last_changes_are_kept() -> None:
    changes: list[list[str]] = []
    for i in range(MAX_CHANGES + 5):
        changes = state_changes(changes, was_down=i % 2 == 1, is_down=i % 2 == 0,
                                now=T0 + timedelta(minutes=i))
    assert len(changes) == MAX_CHANGES
    assert changes[-1] == [(T0 + timedelta(minutes=MAX_CHANGES + 4)).isoformat(), "down"]


def _changes(host: SimHost, gpu: int, link: int) -> list[tuple[datetime, str]]:
    with host.sessions() as s:
        view = health_view(host_health(s, host.settings, host.hostname))
    [port] = [x for x in view.links if (x.gpu, x.link) == (gpu, link)]
    return [(c.at, c.state) for c in port.changes]


def test_down_and_up_are_read_back_after_the_flap_window_forgot_them(host: SimHost) -> None:
    host.send()
    host.evaluate()
    assert _changes(host, 1, 4) == []  # a port that was always up has no history
    down = LinksDown(gpu=1, links=(4,))
    times = []
    for _ in range(2):
        host.inject(down)
        host.step(30)
        times.append((host.now(), "down"))
        host.clear(down)
        host.step(30)
        times.append((host.now(), "up"))
    host.step(3600)  # the flap window (1 h) no longer holds these downs
    assert _changes(host, 1, 4) == times
    assert _changes(host, 1, 5) == []


def test_a_port_down_since_its_first_report_went_down_then(host: SimHost) -> None:
    host.inject(LinksDown(gpu=0, links=(2,)))
    host.send()
    host.evaluate()
    first = host.now()
    host.step(60)
    assert _changes(host, 0, 2) == [(first, "down")]


def _changed_at(host: SimHost) -> datetime | None:
    from peerwatch.app.queries.hosts import host_detail
    with host.sessions() as s:
        return host_detail(s, host.hostname).changed_at


def test_changed_at_moves_with_a_judged_change_not_with_every_report(host: SimHost) -> None:
    """What the dashboard's refresh goes by (GET /hosts/{h} `changed_at`)."""
    host.sweep()
    host.evaluate()
    first = _changed_at(host)
    assert first is not None
    host.step(30)  # an inventory pass, nothing new: the judged answers are the same
    host.step(30)
    assert _changed_at(host) == first
    host.inject(LinksDown(gpu=1, links=(4,)))
    host.step(30)
    moved = _changed_at(host)
    assert moved is not None and moved > first
    host.step(30, kind="sweep")  # a sweep: new measurements for the matrix and series
    assert (_changed_at(host) or moved) > moved
