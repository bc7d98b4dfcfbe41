"""Snapshot delivery against a real server (in-thread uvicorn on SQLite): spooled while the
server is away, delivered oldest first by the next call, and files that can never be
delivered (unreadable, refused for good) set aside instead of retried forever."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx

from peerwatch.probes.agent.sender import SNAPSHOTS_PATH, Sender
from peerwatch.probes.agent.snapshot_outbox import SnapshotSpool, post_snapshot
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.snapshot import Phase
from peerwatch.probes.snapshot_read import take_snapshot
from tests.probes.live_server import TOKEN, free_port, live_server, server_settings


def sender(url: str) -> Sender:
    return Sender(url, TOKEN, 5.0, path=SNAPSHOTS_PATH)


def test_spooled_while_away_then_delivered_oldest_first(tmp_path: Path) -> None:
    fabric = SimulatedFabric("h200x2", hostname="node-s")
    spool = SnapshotSpool(tmp_path / "spool")
    port = free_port()
    away = sender(f"http://127.0.0.1:{port}")
    first = take_snapshot(fabric, job_id="1", phase=Phase.PROLOG)
    second = take_snapshot(fabric, job_id="1", phase=Phase.EPILOG)
    for snap in (first, second):
        result = post_snapshot(snap, away, spool)
        assert result.spooled and not result.delivered and result.kept
    assert len(spool.pending()) == 2
    settings = server_settings(tmp_path / "server")
    with live_server(settings, port=port) as server:
        third = take_snapshot(fabric, job_id="2", phase=Phase.PROLOG)
        result = post_snapshot(third, sender(server.url), spool)
        assert result.delivered and result.replayed == 2 and spool.pending() == []
        listed = httpx.get(f"{server.url}/api/v1/hosts/node-s/snapshots").json()["snapshots"]
    assert {s["snapshot_id"] for s in listed} == {str(s.snapshot_id)
                                                  for s in (first, second, third)}


def test_unreadable_and_refused_files_are_set_aside(tmp_path: Path) -> None:
    spool = SnapshotSpool(tmp_path / "spool")
    snap = take_snapshot(SimulatedFabric("h200x2", hostname="node-t"))
    good = spool.put(snap)
    (spool.directory / "00000000000000000001-x.snapshot.json").write_text("{ broken")
    refused = snap.model_copy(update={"taken_at": snap.taken_at.replace(year=2999),
                                      "snapshot_id": uuid.uuid4()})
    spool.put(refused)
    with live_server(server_settings(tmp_path / "server")) as server:
        result = post_snapshot(None, sender(server.url), spool)
    assert result.replayed == 1 and spool.pending() == [] and not good.exists()
    aside = sorted(p.name.rsplit(".", 1)[1] for p in spool.directory.iterdir()
                   if p.suffix in (".corrupt", ".rejected"))
    assert aside == ["corrupt", "rejected"]
    assert any("refused for good" in line for line in result.lines)
