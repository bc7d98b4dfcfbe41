"""Two ranks' results arrive together, and each result's evaluation moves the network
alerts. The one that runs last must have read every stored result: an evaluation waits for
the network's lock before it reads the figures (app/judging/network.py). Shown on
PostgreSQL, where the wait is seen in `pg_stat_activity`; a Slurm run lost its
NetworkHostPathSlow to the race this closes (a stale evaluation wrote after a fresh one)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from peerwatch.app.alerting.rules_network import NETWORK_SCOPE
from peerwatch.app.judging.network import evaluate_network
from peerwatch.app.judging.service import service_for
from peerwatch.app.schemas.network import PairResultsIn
from peerwatch.app.services.network import store_results
from peerwatch.app.store.locks import transaction_lock
from peerwatch.probes.sim.simnet import BadCable, leaf_spine
from tests.app.network.fleet import result, run_plan, setup
from tests.conftest import eventually

LIMIT_S = 120.0


def _network_alerts(client: TestClient) -> list[tuple[str, str]]:
    alerts = client.get("/api/v1/alerts").json()["alerts"]
    return [(a["labels"]["alertname"], a["labels"]["host"]) for a in alerts
            if a["labels"]["alertname"].startswith("Network")]


def _waiting_on_the_network_lock(sessions: Any) -> bool:
    with sessions() as session:
        return bool(session.scalar(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND wait_event = 'advisory'")))


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_an_evaluation_waiting_for_another_reads_the_results_stored_meanwhile(
        client: TestClient) -> None:
    net = leaf_spine(2, 3)
    setup(client, net)
    assert run_plan(client, net) >= 6
    assert _network_alerts(client) == []
    net.faults = [BadCable("node-2")]
    app: Any = client.app
    sessions, settings = app.state.sessionmaker, app.state.settings
    alerting = service_for(app).alerting
    seen: dict[str, Any] = {}

    def evaluate() -> None:
        with sessions() as session:
            judgement, _ = evaluate_network(session, settings, alerting, datetime.now(UTC))
            seen["faults"] = [(f.kind, f.subject) for f in judgement.faults]

    with sessions() as holder:  # another evaluation, mid-way: it holds the lock
        with transaction_lock(holder, NETWORK_SCOPE):
            late = threading.Thread(target=evaluate)
            late.start()
            assert eventually(lambda: _waiting_on_the_network_lock(sessions), LIMIT_S), (
                "the evaluation read the figures without waiting for the network's lock")
            _store_slow_results(sessions, net)  # the other rank's results land meanwhile
            holder.commit()
    late.join(timeout=LIMIT_S)
    assert not late.is_alive()
    assert seen["faults"] == [("host", "node-2")]
    assert _network_alerts(client) == [("NetworkHostPathSlow", "node-2")]


def _store_slow_results(sessions: Any, net: Any) -> None:
    """node-2's bad cable with every partner, stored as a rank's post stores them."""
    peers = sorted(h for h in net.hosts if h != "node-2")
    body = PairResultsIn(host="node-2", results=[result(p, net.measure("node-2", p, 5))
                                                 for p in peers])
    session: Session
    with sessions() as session:
        store_results(session, body, datetime.now(UTC))


def test_the_periodic_round_leaves_the_network_alerts_to_the_network_evaluation(
        client: TestClient) -> None:
    """The judge's periodic round judges every host with active alerts; the network's
    alerts are kept under NETWORK_SCOPE, which is no host. Judged as a host that is gone,
    they were resolved as "condition no longer holds" while the fault stood, until the next
    pair result: a slow Slurm run lost its NetworkHostPathSlow so."""
    net = leaf_spine(2, 3)
    setup(client, net)
    net.faults = [BadCable("node-2")]
    assert run_plan(client, net) >= 6
    assert _network_alerts(client) == [("NetworkHostPathSlow", "node-2")]
    service = service_for(client.app)
    hosts = {o.host for o in service.evaluate_all(only_due=True)}
    hosts |= {o.host for o in service.evaluate_all()}
    assert NETWORK_SCOPE not in hosts
    assert _network_alerts(client) == [("NetworkHostPathSlow", "node-2")]
