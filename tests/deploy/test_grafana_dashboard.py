"""deploy/grafana/peerwatch-fabric.json against a real Prometheus (Debian's `prometheus`)
scraping a real server and two real probe agents on simulated fabrics (one with a link
down, so the problem panels have something to show): every target of every panel must
parse and return at least one series, with `$host` at All and at one host; the `host`
variable's `label_values` query must list both hosts. The JSON's structure is checked as
Grafana would need it: schemaVersion, unique panel ids, every panel and target on the
templated datasource, a grid position for each panel.

Grafana itself does not run here (no package to install): what it would render is not tested.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from peerwatch.probes.agent.runner import open_runtime
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.report import ReportKind
from peerwatch.probes.sim.faults import LinksDown
from peerwatch.probes.sim.simulated import SimulatedFabric
from tests.deploy import grafana_dashboard as board
from tests.deploy.test_prometheus_scrape import DEPLOY, _config, prometheus
from tests.probes.live_server import TOKEN, live_server, server_settings

HOSTS = {"graf-hgx8-a": [LinksDown(gpu=3, links=(7,))], "graf-hgx8-b": []}
DATASOURCE = "${datasource}"


def test_dashboard_structure() -> None:
    dashboard = board.load()
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    assert dashboard["uid"] and dashboard["title"]
    ids = [p["id"] for p in board.panels(dashboard)]
    assert len(ids) == len(set(ids)), f"panel ids repeat: {sorted(ids)}"
    assert board.variable(dashboard, "datasource")["type"] == "datasource"
    assert board.variable(dashboard, "datasource")["query"] == "prometheus"
    host = board.variable(dashboard, "host")
    assert host["datasource"]["uid"] == DATASOURCE
    assert re.fullmatch(r"label_values\(\w+, host\)", host["definition"])
    for panel in board.panels(dashboard):
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"}, panel["title"]
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == DATASOURCE, panel["title"]
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        for t in panel["targets"]:
            assert t["datasource"]["uid"] == DATASOURCE, panel["title"]
            assert 'host=~"$host"' in t["expr"] or "peerwatch_ingest" in t["expr"], (
                f"panel {panel['title']!r} is not filtered by $host: {t['expr']}")


def test_targets_read_the_template_variables() -> None:
    target = board.Target("p", "A", 'rate(x{host=~"$host"}[$__rate_interval])')
    assert target.promql(".+", "1m") == 'rate(x{host=~".+"}[1m])'


@contextmanager
def scraped_fleet(tmp_path: Path) -> Iterator[str]:
    """A server, an agent per host in HOSTS (each after two sweeps) and a Prometheus
    scraping all of them every second with the shipped rules; yields its URL."""
    settings = server_settings(tmp_path / "server", tokens=(TOKEN,))
    rules = tmp_path / "peerwatch-rules.yml"
    rules.write_text((DEPLOY / "peerwatch-rules.yml").read_text())
    with ExitStack() as stack:
        server = stack.enter_context(live_server(settings))
        agents = []
        for seed, (host, faults) in enumerate(HOSTS.items()):
            probe = ProbeSettings(server_url=server.url, token=TOKEN, metrics_port=0,
                                  metrics_addr="127.0.0.1", spool_dir=tmp_path / host)
            fabric = SimulatedFabric("hgx8", seed=seed, hostname=host, faults=faults)
            runtime = stack.enter_context(open_runtime(probe, fabric=fabric, watchdog=False))
            for _ in range(2):
                runtime.worker.run_pass(ReportKind.SWEEP)
            assert runtime.metrics is not None
            agents.append(f"127.0.0.1:{runtime.metrics.port}")
        work = tmp_path / "prometheus"
        work.mkdir()
        config = yaml.safe_load(_config(server.url.removeprefix("http://"), agents[0], rules))
        for job in config["scrape_configs"]:
            if job["job_name"] == "peerwatch-probe":
                job["static_configs"] = [{"targets": agents}]
        yield stack.enter_context(prometheus(work, yaml.safe_dump(config)))


def _ask(url: str, promql: str) -> tuple[int, Any]:
    try:
        r = httpx.get(f"{url}/api/v1/query", params={"query": promql}, timeout=5)
    except httpx.TransportError:
        return 0, None  # not listening yet
    return r.status_code, r.json() if r.headers.get("content-type", "").startswith(
        "application/json") else r.text


def _unanswered(url: str, queries: dict[str, str]) -> dict[str, str]:
    """The queries (by name) that fail to parse or return no series, with why."""
    missing = {}
    for name, promql in queries.items():
        status, body = _ask(url, promql)
        if status == 400:
            pytest.fail(f"{name}: Prometheus rejects {promql!r}: {body['error']}")
        if status != 200 or not body["data"]["result"]:
            got = body["data"]["result"] if status == 200 else body
            missing[name] = f"{promql} -> {status} {got}"
    return missing


def _wait_until_answered(url: str, queries: dict[str, str], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    missing = _unanswered(url, queries)
    while missing and time.monotonic() < deadline:
        time.sleep(1)
        missing = _unanswered(url, queries)
    assert not missing, "panels whose queries return no series:\n" + "\n".join(
        f"  {name}: {why}" for name, why in missing.items())


def test_every_panel_returns_data_from_a_real_prometheus(tmp_path: Path) -> None:
    dashboard = board.load()
    host_query = re.fullmatch(r"label_values\((\w+), host\)",
                              board.variable(dashboard, "host")["definition"])
    assert host_query
    with scraped_fleet(tmp_path) as url:
        _wait_until_answered(url, {"up": "up == 1"})
        hosts_promql = f"group by (host) ({host_query[1]})"
        _wait_until_answered(url, {"host variable": f"count({hosts_promql}) == {len(HOSTS)}"})
        faulty = next(iter(HOSTS))
        queries = {}
        for t in board.targets(dashboard):
            queries[f"{t.panel!r} {t.ref} (All hosts)"] = t.promql(".+", "1m")
            queries[f"{t.panel!r} {t.ref} ({faulty})"] = t.promql(faulty, "1m")
        _wait_until_answered(url, queries)
        # The check can fail: a series nobody exports is reported by its panel's name.
        with pytest.raises(AssertionError, match="'No such panel' A"):
            _wait_until_answered(url, {"'No such panel' A": "peerwatch_no_such_series"},
                                 seconds=2)
        with pytest.raises(pytest.fail.Exception, match="rejects"):
            _unanswered(url, {"'Bad panel' A": "sum by (host (peerwatch_host_info)"})

