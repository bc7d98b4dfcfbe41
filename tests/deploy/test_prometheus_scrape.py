"""A real Prometheus (Debian's `prometheus`) runs deploy/prometheus/prometheus.yml and the
shipped rules against a real server and a real probe agent: both targets are up, the
agent's per-link series and the server's receive time arrive with the labels the rules
expect, and a rule over the agent's series goes pending on a downed link.

Only the targets, intervals and the rules path are changed from the shipped file.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from peerwatch.probes.agent.runner import open_runtime
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.report import ReportKind
from peerwatch.probes.sim.faults import LinksDown
from peerwatch.probes.sim.simulated import SimulatedFabric
from tests.conftest import SETTLE_S, background, require
from tests.probes.live_server import TOKEN, free_port, live_server, server_settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
HOST = "scrape-hgx8"


def _config(server: str, agent: str, rules: Path) -> str:
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    config["global"].update(scrape_interval="1s", scrape_timeout="1s", evaluation_interval="1s")
    config["rule_files"] = [str(rules)]
    targets = {"peerwatch": [server], "peerwatch-probe": [agent]}
    for job in config["scrape_configs"]:
        job["static_configs"] = [{"targets": targets[job["job_name"]]}]
    return yaml.safe_dump(config)


@contextmanager
def prometheus(work: Path, config: str) -> Iterator[str]:
    binary = shutil.which("prometheus") or "/usr/bin/prometheus"
    require(Path(binary).exists(), "prometheus (Debian package prometheus)")
    (work / "prometheus.yml").write_text(config)
    port = free_port()
    argv = [binary, f"--config.file={work / 'prometheus.yml'}",
            f"--storage.tsdb.path={work / 'data'}", f"--web.listen-address=127.0.0.1:{port}"]
    with background(argv, work / "log.txt"):
        yield f"http://127.0.0.1:{port}"


def _query(url: str, promql: str) -> list[dict[str, Any]]:
    try:
        r = httpx.get(f"{url}/api/v1/query", params={"query": promql}, timeout=5)
    except httpx.TransportError:
        return []  # not listening yet
    if r.status_code != 200:
        return []
    result: list[dict[str, Any]] = r.json()["data"]["result"]
    return result


def _wait_for(url: str, promql: str, count: int, seconds: float = SETTLE_S) -> list[dict[str, Any]]:
    deadline = time.monotonic() + seconds
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        found = _query(url, promql)
        if len(found) >= count:
            return found
        time.sleep(0.5)
    raise AssertionError(f"{promql}: {len(found)} results after {seconds} s, wanted {count}")


def test_prometheus_scrapes_the_server_and_the_agent(tmp_path: Path) -> None:
    settings = server_settings(tmp_path / "server", tokens=(TOKEN,))
    rules = tmp_path / "peerwatch-rules.yml"
    rules.write_text((DEPLOY / "peerwatch-rules.yml").read_text())
    with live_server(settings) as server:
        probe = ProbeSettings(server_url=server.url, token=TOKEN, metrics_port=0,
                              metrics_addr="127.0.0.1", spool_dir=tmp_path / "spool")
        fabric = SimulatedFabric("hgx8", seed=2, hostname=HOST,
                                 faults=[LinksDown(gpu=3, links=(7,))])
        with open_runtime(probe, fabric=fabric, watchdog=False) as runtime:
            runtime.worker.run_pass(ReportKind.SWEEP)
            assert runtime.metrics is not None
            agent = f"127.0.0.1:{runtime.metrics.port}"
            work = tmp_path / "prometheus"
            work.mkdir()
            server_target = server.url.removeprefix("http://")
            with prometheus(work, _config(server_target, agent, rules)) as url:
                up = _wait_for(url, "up == 1", 2)
                assert {u["metric"]["job"] for u in up} == {"peerwatch", "peerwatch-probe"}
                links = _wait_for(url, f'peerwatch_nvlink_up{{host="{HOST}"}}', 144)
                assert {u["metric"]["instance"] for u in links} == {agent}
                _wait_for(url, f'peerwatch_probe_last_received_timestamp_seconds{{host="{HOST}"}}',
                          1)
                pending = _wait_for(url, 'ALERTS{alertname="NVLinkDown"}', 1)
                assert pending[0]["metric"].items() >= {
                    "host": HOST, "gpu": "3", "link": "7", "peer_gpu": "3",
                    "alertstate": "pending"}.items()
