"""Xid/SXid events through the real server, on SQLite and PostgreSQL: stored whole with their
report, listed with the catalog's meaning, bad input a 422 naming the field, and the
/metrics series."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import make_engine
from peerwatch.app.store.tables.events import FabricEventRow
from peerwatch.probes.report import EventKind, EventSource, FabricEvent, Report, utcnow
from tests.app.conftest import probe_headers
from tests.app.factory import sweep

URL = "/api/v1/reports"


def _post(client: TestClient, body: Any) -> Any:
    return client.post(URL, content=body if isinstance(body, str) else json.dumps(body),
                       headers={**probe_headers(), "Content-Type": "application/json"})


def _with_events(host: str = "node-a") -> Report:
    now = utcnow()
    report = sweep(host=host, at=now - timedelta(seconds=30))
    events = [
        FabricEvent(kind=EventKind.XID, code=74, at=now - timedelta(seconds=20), gpu=1, link=3,
                    pci_bus_id="0000:1b:00", sources=[EventSource.KMSG, EventSource.NVML],
                    count=3, message="NVRM: Xid (PCI:0000:1b:00): 74, pid='<unknown>', "
                    "name=<unknown>, NVLink: fatal error detected on link 3(0x0, 0x0)"),
        FabricEvent(kind=EventKind.SXID, code=12028, at=now - timedelta(seconds=10),
                    switch="0000:06:00.0", link=32, fatal=False, sources=[EventSource.KMSG],
                    message="nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 12028, Non-fatal, "
                    "Link 32 egress non-posted PRIV error (First)"),
    ]
    return report.model_copy(update={"events": events})


def _stored(settings: Settings) -> int:
    engine = make_engine(settings)
    try:
        with engine.connect() as conn:
            return int(conn.scalar(select(func.count()).select_from(FabricEventRow)) or 0)
    finally:
        engine.dispose()


def test_events_are_stored_once_and_listed_with_their_meaning(client: TestClient,
                                                              settings: Settings) -> None:
    report = _with_events()
    assert _post(client, report.model_dump_json()).status_code == 201
    assert _post(client, report.model_dump_json()).json()["duplicate"] is True
    assert _stored(settings) == 2
    body = client.get("/api/v1/hosts/node-a/events").json()
    assert body["catalog_version"].startswith("NVIDIA Xid catalog")
    sxid, xid = body["events"]  # newest first
    assert (xid["label"], xid["gpu"], xid["link"], xid["count"], xid["object"]) == (
        "Xid 74", 1, 3, 3, "link")
    assert xid["meaning"] == "NVLink error" and xid["sources"] == ["kmsg", "nvml"]
    assert xid["source"].startswith("https://docs.nvidia.com/deploy/xid-errors/")
    assert (sxid["label"], sxid["severity"], sxid["object"]) == ("SXid 12028", "warning",
                                                                 "switch")
    assert client.get("/api/v1/hosts/nobody/events").status_code == 404


def test_a_bad_event_is_a_422_naming_the_field_and_nothing_is_stored(
        client: TestClient, settings: Settings) -> None:
    good = json.loads(_with_events().model_dump_json())
    cases = [
        (lambda b: b["events"][0].update(code=-1), ["events", 0, "code"]),
        (lambda b: b["events"][1].update(gpu=2), ["events", 1]),
        (lambda b: b["events"][0].update(sources=[]), ["events", 0, "sources"]),
        (lambda b: b["events"][0].update(kind="oops"), ["events", 0, "kind"]),
        (lambda b: b["events"][0].update(at="2999-01-01T00:00:00Z"), ["events", 0, "at"]),
    ]
    for change, loc in cases:
        body = json.loads(json.dumps(good))
        change(body)
        r = _post(client, body)
        assert r.status_code == 422, (loc, r.text)
        assert any(d["loc"][-len(loc):] == loc or d["loc"][1:1 + len(loc)] == loc
                   for d in r.json()["detail"]), (loc, r.json())
    old = json.loads(json.dumps(good)) | {"schema_version": 2}
    r = _post(client, old)
    assert r.status_code == 422 and "events need schema_version 3" in r.text
    assert _stored(settings) == 0


def test_metrics_count_events_and_judge_them(client: TestClient) -> None:
    assert _post(client, _with_events("hgx-m").model_dump_json()).status_code == 201
    text = client.get("/metrics").text
    assert 'peerwatch_xid_events_total{gpu="1",host="hgx-m",xid="xid74"} 3.0' in text
    assert 'peerwatch_xid_events_total{gpu="",host="hgx-m",xid="sxid12028"} 1.0' in text
    assert ('peerwatch_fabric_event_findings{gpu="1",host="hgx-m",level="fault",link="3",'
            'switch="",xid="xid74"} 3.0') in text
    assert ('peerwatch_fabric_event_findings{gpu="",host="hgx-m",level="warning",link="",'
            'switch="0000:06:00.0",xid="sxid12028"} 1.0') in text
