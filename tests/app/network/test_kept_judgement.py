"""A host page's network line polls `GET /api/v1/network/pairs?host=`: the fleet's judgement
is kept between polls and judged again only when a result arrives, ages out or is removed,
or the map changes, on SQLite and PostgreSQL. Counted by the judgements made, not timed."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import delete

from peerwatch.app.queries.network_kept import kept_judgements_for
from peerwatch.app.store.tables.network import HostPairResult
from peerwatch.probes.sim.simnet import leaf_spine, network_map
from tests.app.network.fleet import ADMIN, run_pair, setup

PAIRS = "/api/v1/network/pairs"


def _pairs_of(client: TestClient, host: str) -> list[tuple[str, str]]:
    r = client.get(PAIRS, params={"host": host})
    assert r.status_code == 200, r.text
    return [(p["host"], p["peer_host"]) for p in r.json()["pairs"]]


def _leaves(client: TestClient) -> dict[str, Any]:
    pairs = client.get(PAIRS).json()["pairs"]
    return {(p["host"], p["peer_host"]): (p["leaf"], p["peer_leaf"]) for p in pairs}


def test_polls_reuse_the_judgement_until_a_new_result_is_stored(client: TestClient) -> None:
    net = leaf_spine(1, 3)
    setup(client, net)
    run_pair(client, net, "node-1", "node-2")
    kept = kept_judgements_for(client.app)
    assert _pairs_of(client, "node-3") == []
    judged = kept.judged
    for _ in range(3):  # the page polls: the same answer, judged once
        assert _pairs_of(client, "node-3") == []
    assert _pairs_of(client, "node-1") == [("node-1", "node-2")]
    assert kept.judged == judged
    run_pair(client, net, "node-1", "node-3")
    assert _pairs_of(client, "node-3") == [("node-1", "node-3")]  # seen at the next read
    assert kept.judged == judged + 1
    assert _pairs_of(client, "node-3") == [("node-1", "node-3")]
    assert kept.judged == judged + 1


def test_a_removed_result_and_a_moved_host_are_seen_at_the_next_read(
        client: TestClient) -> None:
    """Written past this app (another replica, an operator): the database says it changed."""
    net = leaf_spine(2, 2)
    setup(client, net)
    run_pair(client, net, "node-2", "node-3")  # the older result: its removal leaves the
    run_pair(client, net, "node-1", "node-3")  # newest id and arrival, lowers the count
    kept = kept_judgements_for(client.app)
    assert _pairs_of(client, "node-3") == [("node-1", "node-3"), ("node-2", "node-3")]
    with client.app.state.sessionmaker() as session:  # type: ignore[attr-defined]
        session.execute(delete(HostPairResult).where(HostPairResult.host == "node-2"))
        session.commit()
    judged = kept.judged
    assert _pairs_of(client, "node-3") == [("node-1", "node-3")]
    assert kept.judged == judged + 1
    before = _leaves(client)[("node-1", "node-3")]
    hosts = network_map(net)
    for h in hosts:
        if h["host"] == "node-3":
            h["leaf"] = "leaf-moved"
    r = client.put("/api/v1/network/hosts", json={"hosts": hosts}, headers=ADMIN)
    assert r.status_code == 200, r.text
    assert _leaves(client)[("node-1", "node-3")] == (before[0], "leaf-moved")
