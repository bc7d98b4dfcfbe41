"""The agent's own `/metrics` (`peerwatch probe --metrics-port`): a simulated HGX board's
per-link, per-GPU and per-pair series, promtool-clean, counted, served over real HTTP, and
the probe never importing the server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from peerwatch.probes.agent.agent_state import AgentState
from peerwatch.probes.agent.metrics import AgentCollector
from peerwatch.probes.agent.metrics_server import AgentExposition, MetricsServer
from peerwatch.probes.agent.runner import open_runtime
from peerwatch.probes.agent.spool import Spool
from peerwatch.probes.config import ProbeSettings
from peerwatch.probes.errors import BadProbeRequest
from peerwatch.probes.metrics_text import render
from peerwatch.probes.report import GPU_TESTS, JOINT_TESTS, PAIR_TESTS, ReportKind, TestName
from peerwatch.probes.sim.faults import (
    BusyGpu,
    Contention,
    ErrorGrowth,
    LinksDown,
    P2PDisabled,
    PcieDowntrained,
)
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import build_report
from tests.app.metrics_helpers import promtool_check, series, value

GPUS, LINKS, PAIRS = 8, 8 * 18, 8 * 7
HOST = "hgx-07"


def per_host(bandwidth_tests: int, latency: bool, gpu_tests: int = 0) -> int:
    """docs/alerts.md, "Series per host" (agent): the formula the docs give."""
    host = 3 + 6 + 3  # info, last report, errors; sweep cost (6); spool (3)
    gpu = GPUS * (7 + gpu_tests)  # ports had, active, PCIe gen/max/width/max, replays; copies
    gpu += GPUS * (9 + 1 + 6 + 2)  # clocks: reasons, throttled, 6 gauges, 2 violation counters
    link = LINKS * 8  # up, 5 error counters, tx/rx bytes
    pair = PAIRS * (3 + 2 * bandwidth_tests + 2 * latency)  # NV#, access, pair; value, contended
    return host + gpu + link + pair


def _expose(state: AgentState, spool: Spool, tests: list[TestName] | None = None) -> str:
    text = AgentExposition(state, spool, tests)().decode()
    return "\n".join(line for line in text.splitlines()
                     if not line.startswith("peerwatch_probe_process_")) + "\n"


@pytest.fixture
def spool(tmp_path: Path) -> Spool:
    s = Spool(tmp_path / "spool", 1 << 20)
    yield s
    s.close()


@pytest.fixture
def faulty() -> SimulatedFabric:
    return SimulatedFabric("hgx8", seed=4, hostname=HOST, faults=[
        LinksDown(gpu=3, links=(7,)), PcieDowntrained(gpu=2, gen=4),
        ErrorGrowth(gpu=1, link=2, counter="replay", per_second=5.0),
        P2PDisabled(a=0, b=1), Contention(gpu=4, peer=5)])


def test_hgx8_series_are_promtool_clean_and_match_the_formula(faulty: SimulatedFabric,
                                                              spool: Spool) -> None:
    state = AgentState()
    state.record(build_report(faulty))
    text = _expose(state, spool)
    assert promtool_check(text) == ""
    # the default sweep: 6 bandwidth tests; h2d, d2h, local and the all-to-all's two per GPU
    assert len(series(text)) == per_host(6, True, 5)


def test_the_fast_renderer_writes_what_client_python_writes(faulty: SimulatedFabric,
                                                            spool: Spool) -> None:
    state = AgentState()
    state.record(build_report(faulty))
    collector = AgentCollector(state, spool)
    registry = CollectorRegistry()
    registry.register(collector)
    assert render(collector.collect()) == generate_latest(registry)


def test_the_fast_renderer_escapes_label_values_as_client_python_does() -> None:
    from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily

    family = GaugeMetricFamily("peerwatch_x", 'doc with \\ and\nnewline', labels=["host"])
    family.add_metric(['odd "host"\\name\n'], 1.5)
    family.add_metric(["plain"], float("inf"))

    class One:
        def collect(self):  # type: ignore[no-untyped-def]
            return [family]

    registry = CollectorRegistry()
    registry.register(One())
    assert render([family]) == generate_latest(registry)
    with pytest.raises(ValueError, match="histogram"):
        render([HistogramMetricFamily("peerwatch_h", "h", buckets=[("+Inf", 1)], sum_value=1)])


def test_the_series_say_what_the_probe_read(faulty: SimulatedFabric, spool: Spool) -> None:
    report = build_report(faulty)
    state = AgentState()
    state.record(report)
    text = _expose(state, spool)
    assert value(text, "peerwatch_nvlink_up", host=HOST, gpu="3", link="7") == 0
    assert value(text, "peerwatch_nvlink_up", host=HOST, gpu="3", link="6") == 1
    assert value(text, "peerwatch_gpu_nvlink_active_links", host=HOST, gpu="3") == 17
    assert value(text, "peerwatch_gpu_nvlink_links", host=HOST, gpu="3") == 18
    assert value(text, "peerwatch_pcie_link_generation", host=HOST, gpu="2") == 4
    assert value(text, "peerwatch_pcie_link_max_generation", host=HOST, gpu="2") == 5
    assert value(text, "peerwatch_p2p_access", host=HOST, gpu="0", peer_gpu="1") == 0
    assert value(text, "peerwatch_p2p_access", host=HOST, gpu="0", peer_gpu="2") == 1
    # each ordered pair names its unordered pair, low index first: what PromQL pages by
    assert value(text, "peerwatch_p2p_pair_info", host=HOST, gpu="5", peer_gpu="2",
                 pair="2-5") == 1
    assert value(text, "peerwatch_p2p_pair_info", host=HOST, gpu="2", peer_gpu="5",
                 pair="2-5") == 1
    assert "peerwatch_p2p_pair_info{" in text and 'pair="5-2"' not in text
    ce = next(r for r in report.results if (r.test, r.src, r.dst) == (TestName.CE_WRITE, 4, 5))
    assert value(text, "peerwatch_p2p_bandwidth_bytes_per_second", host=HOST, gpu="4",
                 peer_gpu="5", test="ce_write") == ce.value
    assert value(text, "peerwatch_p2p_contended", host=HOST, gpu="4", peer_gpu="5",
                 test="ce_write") == (1 if ce.contended else 0)
    assert ce.contended  # the fault made it so: the flag above is not vacuous
    h2d = {r.src: r.value for r in report.results if r.test is TestName.H2D}
    for gpu in (2, 3):  # GPU2's PCIe trained gen4: its host copies run at about half
        assert value(text, "peerwatch_gpu_copy_bandwidth_bytes_per_second", host=HOST,
                     gpu=str(gpu), test="h2d") == h2d[gpu]
    assert h2d[2] < 0.6 * h2d[3]
    lat = next(r for r in report.results if (r.test, r.src, r.dst) == (TestName.LATENCY, 0, 2))
    assert value(text, "peerwatch_p2p_latency_seconds", host=HOST, gpu="0",
                 peer_gpu="2") == lat.value
    assert value(text, "peerwatch_probe_sweep_gpu_seconds", host=HOST) == report.cost.gpu_time_s
    assert value(text, "peerwatch_probe_transfer_errors", host=HOST) == 0
    assert value(text, "peerwatch_probe_spool_reports") == 0


def test_counters_are_lifetime_totals_and_grow(spool: Spool) -> None:
    clock = [0.0]
    fabric = SimulatedFabric("hgx8", seed=4, hostname=HOST, clock=lambda: clock[0],
                             faults=[ErrorGrowth(gpu=1, link=2, counter="replay", per_second=5.0)])
    state = AgentState()
    state.record(build_report(fabric, ReportKind.INVENTORY))
    before = value(_expose(state, spool), "peerwatch_nvlink_replay_errors_total",
                   host=HOST, gpu="1", link="2")
    clock[0] += 60
    state.record(build_report(fabric, ReportKind.INVENTORY))
    after = value(_expose(state, spool), "peerwatch_nvlink_replay_errors_total",
                  host=HOST, gpu="1", link="2")
    assert before is not None and after is not None and after - before == pytest.approx(300)


def test_a_pair_a_sweep_skipped_keeps_its_newest_value(spool: Spool) -> None:
    fabric = SimulatedFabric("hgx8", seed=4, hostname=HOST)
    state = AgentState()
    first = build_report(fabric)
    state.record(first)
    fabric.inject(BusyGpu(gpu=6))
    second = build_report(fabric)
    assert not any(6 in (r.src, r.dst) for r in second.results)  # GPU6 was skipped
    state.record(second)
    text = _expose(state, spool)
    kept = next(r for r in first.results if (r.test, r.src, r.dst) == (TestName.CE_READ, 6, 0))
    assert value(text, "peerwatch_p2p_bandwidth_bytes_per_second", host=HOST, gpu="6",
                 peer_gpu="0", test="ce_read") == kept.value
    assert value(text, "peerwatch_probe_skipped_gpus", host=HOST) == 1


def test_a_gpu_gone_from_the_inventory_takes_its_pairs_along(spool: Spool) -> None:
    """Xid 79: the old values of its pairs must not keep reading healthy."""
    state = AgentState()
    sweep = build_report(SimulatedFabric("hgx8", seed=4, hostname=HOST))
    state.record(sweep)
    inventory = sweep.inventory.model_copy(update={
        "gpus": [g for g in sweep.inventory.gpus if g.index != 4],
        "nvlinks": [p for p in sweep.inventory.nvlinks if p.gpu != 4],
        "pairs": [p for p in sweep.inventory.pairs if 4 not in (p.src, p.dst)]})
    state.record(sweep.model_copy(update={"kind": ReportKind.INVENTORY, "inventory": inventory,
                                          "results": [], "counters": []}))
    text = _expose(state, spool)
    assert promtool_check(text) == ""
    assert not [line for line in series(text) if 'gpu="4"' in line or 'peer_gpu="4"' in line]
    assert value(text, "peerwatch_p2p_bandwidth_bytes_per_second", host=HOST, gpu="0",
                 peer_gpu="1", test="ce_write") is not None


def test_a_port_gone_from_the_inventory_still_counts_as_had(spool: Spool) -> None:
    state = AgentState()
    full = build_report(SimulatedFabric("hgx8", seed=4, hostname=HOST), ReportKind.INVENTORY)
    state.record(full)
    inventory = full.inventory.model_copy(update={
        "nvlinks": [p for p in full.inventory.nvlinks if (p.gpu, p.link) != (5, 17)]})
    state.record(full.model_copy(update={"inventory": inventory}))
    text = _expose(state, spool)
    assert value(text, "peerwatch_gpu_nvlink_links", host=HOST, gpu="5") == 18
    assert value(text, "peerwatch_gpu_nvlink_active_links", host=HOST, gpu="5") == 17


def test_metrics_tests_cut_the_pair_series(faulty: SimulatedFabric, spool: Spool) -> None:
    state = AgentState()
    state.record(build_report(faulty))
    text = _expose(state, spool, [TestName.CE_WRITE, TestName.LATENCY])
    assert len(series(text)) == per_host(1, True)
    assert value(text, "peerwatch_p2p_bandwidth_bytes_per_second", host=HOST, gpu="0",
                 peer_gpu="2", test="ce_read") is None


def test_before_the_first_pass_only_the_spool_is_shown(spool: Spool) -> None:
    text = _expose(AgentState(), spool)
    assert promtool_check(text) == ""
    assert {line.split(" ")[0] for line in series(text)} == {
        "peerwatch_probe_spool_reports", "peerwatch_probe_spool_bytes",
        "peerwatch_probe_dropped_reports_total"}


def _without_process_series(text: bytes) -> bytes:
    """The agent's own CPU and memory move between two scrapes; the host's series do not."""
    return b"\n".join(line for line in text.split(b"\n") if b"_process_" not in line)


def test_the_host_text_is_rendered_when_a_pass_is_recorded_not_per_scrape(spool: Spool) -> None:
    state = AgentState()
    exposition = AgentExposition(state, spool)
    built = []
    original = exposition.collector.host_families

    def counting(view):  # type: ignore[no-untyped-def]
        built.append(view)
        return original(view)

    exposition.collector.host_families = counting  # type: ignore[method-assign]
    fabric = SimulatedFabric("hgx8", seed=4, hostname=HOST)
    state.record(build_report(fabric, ReportKind.INVENTORY))
    assert len(built) == 1  # on the recording thread
    texts = {_without_process_series(exposition()) for _ in range(3)}
    assert len(built) == 1 and len(texts) == 1
    state.record(build_report(fabric, ReportKind.INVENTORY))
    assert len(built) == 2


def test_a_group_that_fails_leaves_the_others(faulty: SimulatedFabric,
                                              caplog: pytest.LogCaptureFixture) -> None:
    class BrokenSpool:
        def __len__(self) -> int:
            return 0

        def size_bytes(self) -> int:
            raise RuntimeError("deque mutated during iteration")

        def dropped(self) -> int:
            return 0

    state = AgentState()
    state.record(build_report(faulty))
    text = AgentExposition(state, BrokenSpool())().decode()
    assert "peerwatch_probe_spool_reports" not in text
    assert value(text, "peerwatch_nvlink_up", host=HOST, gpu="3", link="7") == 0
    assert "the spool series could not be built" in caplog.text


def test_the_runtime_serves_metrics_over_http(tmp_path: Path) -> None:
    """`--metrics-port 0` picks a free port; a pass later it shows; closed with the runtime."""
    settings = ProbeSettings(server_url="http://127.0.0.1:9", token="t", metrics_port=0,
                             metrics_addr="127.0.0.1", spool_dir=tmp_path / "spool",
                             request_timeout_s=0.5, metrics_tests="ce_write,latency")
    fabric = SimulatedFabric("hgx8", seed=4, hostname=HOST)
    with open_runtime(settings, fabric=fabric, watchdog=False) as runtime:
        assert runtime.metrics is not None
        url = f"http://127.0.0.1:{runtime.metrics.port}/metrics"
        runtime.worker.run_pass(ReportKind.SWEEP)  # the server is unreachable: it spools
        r = httpx.get(url, timeout=5)
        assert r.status_code == 200
        assert value(r.text, "peerwatch_probe_spool_reports") == 1
        assert value(r.text, "peerwatch_nvlink_up", host=HOST, gpu="0", link="0") == 1
        assert value(r.text, "peerwatch_p2p_contended", host=HOST, gpu="0", peer_gpu="1",
                     test="ce_read") is None  # PEERWATCH_PROBE_METRICS_TESTS honoured
        assert "peerwatch_probe_process_cpu_seconds_total" in r.text
    with pytest.raises(httpx.TransportError):
        httpx.get(url, timeout=1)


def test_a_taken_port_is_a_clear_error() -> None:
    state = AgentState()
    first = MetricsServer(AgentExposition(state), 0, "127.0.0.1")
    try:
        with pytest.raises(BadProbeRequest, match="--metrics-port"):
            MetricsServer(AgentExposition(state), first.port, "127.0.0.1")
    finally:
        first.close()


def test_metrics_tests_setting_reads_a_list_and_refuses_unknown_tests() -> None:
    assert ProbeSettings(metrics_tests="ce_write, latency").metrics_tests == [
        TestName.CE_WRITE, TestName.LATENCY]
    assert ProbeSettings().metrics_tests == [*PAIR_TESTS, *GPU_TESTS, *JOINT_TESTS]
    with pytest.raises(ValueError, match="metrics_tests"):
        ProbeSettings(metrics_tests="ce_write,warp_drive")


def test_the_agent_metrics_never_import_the_server() -> None:
    code = ("import sys, peerwatch.probes.agent.runner, peerwatch.probes.agent.metrics_server; "
            "bad = [m for m in ('fastapi', 'sqlalchemy', 'app') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_cli_option_and_env_reach_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from peerwatch.app.cli import build_parser
    from peerwatch.app.cli.commands.probe import settings_from

    monkeypatch.setenv("PEERWATCH_PROBE_METRICS_TESTS", "ce_bidir")
    monkeypatch.setenv("PEERWATCH_PROBE_TOKEN", "t")
    args = build_parser().parse_args(["probe", "--metrics-port", "9402"])
    settings = settings_from(args)
    assert settings.metrics_port == 9402 and settings.metrics_tests == [TestName.CE_BIDIR]
    assert settings_from(build_parser().parse_args(["probe"])).metrics_port is None
