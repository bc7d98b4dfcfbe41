"""The read API over a stored history, on SQLite and PostgreSQL: verdicts with reasons,
matrices, bucketed series, link rates, topology, inventory and 404s naming the missing."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from peerwatch.app.main import create_app
from peerwatch.app.runtime.config import Settings
from peerwatch.app.store.db import head_revision
from peerwatch.app.store.tables.history import LINK_KEYFRAME_S
from peerwatch.probes.report import Report, TestName
from tests.app.conftest import judge_later, probe_headers
from tests.app.factory import T0, expected_value, healthy, sweep
from tests.app.judged_client import JudgedClient

STEP = timedelta(minutes=10)
EXPECTED = expected_value(TestName.CE_WRITE, n=4)


def slow_pair(low_from: int) -> Any:
    """GPU1->GPU2 drops to 0.54 of expected from sweep `low_from` on."""
    def value(i: int) -> Any:
        def at(s: int, d: int, t: TestName) -> float | None:
            if (s, d) == (1, 2) and t is TestName.CE_WRITE and i >= low_from:
                return EXPECTED * 0.54
            return healthy(s, d, t)
        return at
    return value


@pytest.fixture
def api(settings: Settings) -> Iterator[TestClient]:
    """An app that calls the two-day-old test history fresh (nothing is stale)."""
    fresh = settings.model_copy(update={"stale_after_s": 30 * 86_400.0,
                                        "degraded_sustain_s": 1200.0})
    with JudgedClient(create_app(fresh)) as client:
        yield client


def post(client: TestClient, report: Report) -> None:
    r = client.post("/api/v1/reports", content=report.model_dump_json(),
                    headers={**probe_headers(), "Content-Type": "application/json"})
    assert r.status_code == 201, r.text


def history(client: TestClient, sweeps: int = 9, low_from: int = 6,
            replays_per_sweep: int = 0) -> None:
    """`sweeps` sweeps 10 min apart; GPU1->GPU2 slow from `low_from`; GPU0->GPU1 contended
    (and slow) in the last sweep; counters growing, with one reset."""
    values = slow_pair(low_from)
    for i in range(sweeps):
        counters = {(g, k): 1000 * i for g in range(4) for k in range(2)}
        counters[(0, 1)] = 7 if i == sweeps - 1 else 1000 * i  # GPU0 link 1 reset
        contended = [(0, 1)] if i == sweeps - 1 else []
        fn = values(i)

        def v(s: int, d: int, t: TestName, fn: Any = fn, last: bool = i == sweeps - 1) -> Any:
            busy = last and (s, d) == (0, 1) and t is TestName.CE_WRITE
            return EXPECTED * 0.3 if busy else fn(s, d, t)

        errors = {key: 5 + replays_per_sweep * i for key in counters}
        post(client, sweep(n=4, at=T0 + i * STEP, value=v, contended=contended,
                           counters=counters, error_counts=errors,
                           tests=[TestName.CE_WRITE, TestName.LATENCY]))


def test_health_calls_the_sustained_slow_pair_degraded_and_says_why(api: TestClient) -> None:
    history(api)
    h = api.get("/api/v1/hosts/node-a/health").json()
    pairs = {(p["src"], p["dst"]): p for p in h["pairs"]}
    slow = pairs[(1, 2)]
    assert slow["verdict"] == "degraded"
    assert slow["reason"] == ("GPU1->GPU2 ce_write 214 GB/s is 0.54 of expected 397 GB/s "
                              "(NV18 x 26.6 GB/s x 0.83) and 0.55 of its 7-day baseline, "
                              "for 20 min")
    assert pairs[(0, 1)]["verdict"] == "healthy"  # contended and slow: not judged
    assert "contended" in pairs[(0, 1)]["reason"]
    assert pairs[(2, 1)]["verdict"] == "healthy"
    assert h["verdict"] == "degraded"
    # a pair slow between two GPUs whose other pairs work is a pair fault: the
    # pair's (P2PBandwidthDegraded names it), both ends healthy, kept apart by the scheduler
    assert {g["gpu"]: g["verdict"] for g in h["gpus"]} == {
        0: "healthy", 1: "healthy", 2: "healthy", 3: "healthy"}
    assert "(not: GPU1->GPU2); kept apart from GPU2 (a pair fault" in h["gpus"][1]["reason"]
    assert len(h["links"]) == 4 * 18


def test_short_dip_is_not_degraded_yet(api: TestClient) -> None:
    history(api, sweeps=8, low_from=7)
    pairs = {(p["src"], p["dst"]): p for p in api.get("/api/v1/hosts/node-a/health").json()
             ["pairs"]}
    assert pairs[(1, 2)]["verdict"] == "healthy"
    assert "low for 0 s, degraded after 20 min" in pairs[(1, 2)]["tests"][0]["reason"]


def test_hosts_list_summarises(api: TestClient) -> None:
    history(api)
    hosts = api.get("/api/v1/hosts").json()["hosts"]
    assert len(hosts) == 1
    h = hosts[0]
    assert (h["host"], h["verdict"], h["gpus_total"], h["gpus_healthy"]) == \
        ("node-a", "degraded", 4, 4)  # the slow pair is its own fault: its ends are healthy
    assert h["worst_pair"] == {"src": 1, "dst": 2, "test": "ce_write", "ratio": 0.54}
    firing = api.get("/api/v1/alerts", params={"host": "node-a", "state": "firing"}).json()
    assert h["stale"] is False and h["alerts_firing"] == len(firing["alerts"]) > 0
    assert "P2PBandwidthDegraded" in {a["alertname"] for a in firing["alerts"]}


def test_stale_host_is_unknown(client: TestClient) -> None:
    """Staleness is the server's clock: a report finished two days ago by the probe's clock
    but received now is a host heard from now; two days of silence after it is stale."""
    post(client, sweep(n=2))
    h = client.get("/api/v1/hosts").json()["hosts"][0]
    assert (h["stale"], h["verdict"]) == (False, "healthy")
    judge_later(client, 2 * 86_400)  # the default stale_after_s is 30 min
    h = client.get("/api/v1/hosts").json()["hosts"][0]
    assert h["stale"] is True
    assert h["verdict"] == "unknown"
    assert h["reason"].startswith("node-a: no report for 2.0 days")


def test_matrix_has_every_ordered_pair(api: TestClient) -> None:
    history(api)
    m = api.get("/api/v1/hosts/node-a/matrix", params={"test": "ce_write"}).json()
    assert m["gpus"] == [0, 1, 2, 3] and m["unit"] == "B/s"
    cells = {(c["src"], c["dst"]): c for c in m["cells"]}
    assert len(cells) == 12
    slow = cells[(1, 2)]
    assert slow["verdict"] == "degraded"
    assert slow["ratio"] == pytest.approx(0.54)
    assert slow["expected"] == pytest.approx(EXPECTED)
    assert slow["baseline"] == pytest.approx(EXPECTED * 0.98)
    assert cells[(0, 1)]["contended"] is True and cells[(0, 1)]["foreign_bytes"] == 8 << 30
    lat = api.get("/api/v1/hosts/node-a/matrix", params={"test": "latency"}).json()
    assert lat["unit"] == "s" and lat["cells"][0]["verdict"] == "healthy"


def test_series_buckets_in_sql_with_baseline_expected_and_contended(api: TestClient) -> None:
    history(api)
    r = api.get("/api/v1/hosts/node-a/series", params={
        "src": 1, "dst": 2, "test": "ce_write", "since": T0.isoformat(),
        "until": (T0 + 2 * timedelta(hours=1)).isoformat(), "step": 1800})
    s = r.json()
    assert r.status_code == 200, s
    assert s["source"] == "raw" and s["step_s"] == 1800
    counts = [b["count"] for b in s["buckets"]]
    assert counts == [3, 3, 3]
    last = s["buckets"][-1]
    assert last["min"] == last["max"] == pytest.approx(EXPECTED * 0.54)
    first = s["buckets"][0]
    assert first["mean"] == pytest.approx(EXPECTED * 0.98)
    assert s["expected"]["value"] == pytest.approx(EXPECTED)
    assert s["baseline"]["n"] >= 5
    busy = api.get("/api/v1/hosts/node-a/series", params={
        "src": 0, "dst": 1, "since": T0.isoformat(),
        "until": (T0 + timedelta(hours=2)).isoformat()}).json()
    assert [p["foreign_bytes"] for p in busy["contended"]] == [8 << 30]
    assert sum(b["count"] for b in busy["buckets"]) == 8  # the contended one is not bucketed


def test_link_series_gives_rates_across_a_reset(api: TestClient) -> None:
    history(api)
    r = api.get("/api/v1/hosts/node-a/links/series", params={
        "since": T0.isoformat(), "until": (T0 + timedelta(hours=2)).isoformat(),
        "step": 600, "gpu": 0})
    data = r.json()
    assert r.status_code == 200, data
    links = {(x["gpu"], x["link"]): x["points"] for x in data["links"]}
    assert set(links) == {(0, 0), (0, 1)}
    # a moving port's traffic row every `per` sweeps (LINK_KEYFRAME_S: 20-min rates)
    per = math.ceil(LINK_KEYFRAME_S / 600)
    steady = links[(0, 0)]
    assert [p["tx_bps"] for p in steady] == [pytest.approx(1000 / 600)] * (8 // per)
    assert steady[0]["replay_per_s"] == 0
    reset = links[(0, 1)]
    assert reset[-1]["tx_bps"] == pytest.approx(7 / (600 * per))  # 7000 -> 7: restarted
    assert data["pcie"][0]["points"][0]["replay_per_s"] == 0


def test_link_errors_growing_make_links_degraded(api: TestClient) -> None:
    history(api, sweeps=3, low_from=99, replays_per_sweep=1000)
    links = api.get("/api/v1/hosts/node-a/health").json()["links"]
    growing = [x for x in links if x["verdict"] == "degraded"]
    assert {(x["gpu"], x["link"]) for x in growing} == {(g, k) for g in range(4)
                                                        for k in range(2)}
    assert "replay errors growing 1.67/s" in growing[0]["reason"]


def test_topology_graph_of_an_nvswitch_board(api: TestClient) -> None:
    post(api, sweep(n=4, down_links=[(3, k) for k in range(18)]))
    topo = api.get("/api/v1/hosts/node-a/topology").json()
    kinds = sorted(n["kind"] for n in topo["nodes"])
    assert kinds == ["cpu", "gpu", "gpu", "gpu", "gpu", "nvswitch"]
    edges = {e["id"]: e for e in topo["edges"]}
    assert edges["gpu0-nvswitch"]["width"] == 18
    assert edges["gpu0-nvswitch"]["latest_bps"] == pytest.approx(EXPECTED * 0.98)
    assert edges["gpu3-nvswitch"]["width"] == 0
    assert edges["gpu3-nvswitch"]["verdict"] == "down"
    assert edges["gpu0-cpu0"]["kind"] == "pcie" and edges["gpu0-cpu0"]["pcie_width"] == 16
    gpu3 = next(n for n in topo["nodes"] if n["id"] == "gpu3")
    assert gpu3["verdict"] == "down" and "all 18 NVLinks down" in gpu3["reason"]


def test_host_detail_is_the_inventory(api: TestClient) -> None:
    post(api, sweep(n=2, counters={(0, 0): 1}))
    d = api.get("/api/v1/hosts/node-a").json()
    assert [g["index"] for g in d["gpus"]] == [0, 1]
    assert d["gpus"][0]["nvlinks_up"] == 18
    assert d["gpus"][0]["activity"]["utilization_pct"] == 0.0
    assert len(d["nvlinks"]) == 36 and len(d["pairs"]) == 2
    assert d["pairs"][0]["topology"] == "NV18"
    assert d["last_sweep"]["gpu_time_s"] == 0.0


@pytest.mark.parametrize("path, missing", [
    ("/api/v1/hosts/ghost", "host 'ghost' not found"),
    ("/api/v1/hosts/ghost/topology", "host 'ghost' not found"),
    ("/api/v1/hosts/ghost/health", "host 'ghost' not found"),
    ("/api/v1/hosts/ghost/links/series", "host 'ghost' not found"),
    ("/api/v1/hosts/node-a/matrix?test=bogus", "test 'bogus' not found"),
    ("/api/v1/hosts/node-a/matrix?test=sm_read", "test 'sm_read' not found on host 'node-a'"),
    ("/api/v1/hosts/node-a/series?src=0&dst=9", "GPU 9 not found on host 'node-a'"),
    ("/api/v1/hosts/node-a/series?src=0&dst=1&test=warp", "test 'warp' not found"),
    ("/api/v1/hosts/node-a/links/series?gpu=0&link=40", "NVLink 40 not found on host 'node-a'"),
])
def test_unknown_names_are_404_naming_them(api: TestClient, path: str, missing: str) -> None:
    post(api, sweep(n=2))
    r = api.get(path)
    assert r.status_code == 404
    assert r.json()["detail"] == missing


def test_bad_parameters_are_422(api: TestClient) -> None:
    post(api, sweep(n=2))
    backwards = {"src": 0, "dst": 1, "since": T0.isoformat(),
                 "until": (T0 - timedelta(hours=1)).isoformat()}
    r = api.get("/api/v1/hosts/node-a/series", params=backwards)
    assert r.status_code == 422 and r.json()["detail"][0]["msg"] == "since must be before until"
    r = api.get("/api/v1/hosts/node-a/series", params={"src": 0, "dst": 1, "step": 0})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "step"]
    r = api.get("/api/v1/hosts/node-a/series", params={"dst": 1})
    assert r.json()["detail"][0]["loc"] == ["query", "src"]


def test_healthz_names_the_database(client: TestClient, settings: Settings) -> None:
    r = client.get("/healthz").json()
    assert r["status"] == "ok" and r["schema_revision"] == head_revision()
    assert r["database"] == ("sqlite" if settings.database_url.startswith("sqlite")
                             else "postgresql")


def test_openapi_lists_every_endpoint_with_examples(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    for path in ("/api/v1/reports", "/api/v1/hosts", "/api/v1/hosts/{host}",
                 "/api/v1/hosts/{host}/topology", "/api/v1/hosts/{host}/matrix",
                 "/api/v1/hosts/{host}/series", "/api/v1/hosts/{host}/links/series",
                 "/api/v1/hosts/{host}/health", "/healthz"):
        assert path in doc["paths"], path
    schemas = doc["components"]["schemas"]
    for name in ("HostsResponse", "HostDetail", "TopologyResponse", "MatrixResponse",
                 "SeriesResponse", "LinkSeriesResponse", "HealthResponse", "IngestResult"):
        assert schemas[name]["examples"], name
    body = doc["paths"]["/api/v1/reports"]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"]["$ref"].endswith("/Report")
    assert "Report" in schemas and "TransferResult" in schemas


def test_a_host_stored_but_not_judged_yet_reads_unknown_everywhere(settings: Settings) -> None:
    """Ingested, its judgement not stored yet (it comes right after the commit): every read
    answers, unknown, instead of failing."""
    from peerwatch.app.ingest.rows import ingest
    from peerwatch.app.judging.sessions import make_sessionmaker
    from peerwatch.app.store.db import make_engine
    engine = make_engine(settings)
    with make_sessionmaker(engine)() as s:
        ingest(s, sweep(n=2), settings, T0)
    engine.dispose()
    with JudgedClient(create_app(settings)) as c:
        for path in ("", "/topology", "/health", "/matrix"):
            r = c.get(f"/api/v1/hosts/node-a{path}")
            assert r.status_code in (200, 404), (path, r.text)
        assert c.get("/api/v1/hosts/node-a/health").json()["verdict"] == "unknown"
        assert c.get("/api/v1/hosts").json()["hosts"][0]["reason"].endswith("not judged yet")
