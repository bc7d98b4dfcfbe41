"""`peerwatch probe`: measure this host's GPU fabric on a schedule and report to a server.

Every option falls back to its `PEERWATCH_PROBE_*` environment variable, then to the default
its help names (the defaults come from `probes.config.ProbeSettings`, so help never lies).
`--once` runs one sweep, sends it (or spools it) and exits: 0 when the server has it or it
waits safely in the spool, 3 when the server refused the token (report kept in the spool),
4 when the server rejected the report, 1 when it could not be measured or kept.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from typing import Any

from peerwatch.app.cli.credential import refuse_token_option
from peerwatch.app.cli.environment import warn_unknown_names
from peerwatch.app.runtime.config_errors import read_settings
from peerwatch.app.runtime.logs import configure_logging
from peerwatch.app.runtime.signals import stop_on_signals
from peerwatch.probes.agent.outbox import Delivery, Submitted
from peerwatch.probes.agent.runner import ProbeRuntime, open_runtime
from peerwatch.probes.agent.sender import Outcome
from peerwatch.probes.agent.spool import SpoolLocked
from peerwatch.probes.config import ENV_PREFIX, ProbeSettings
from peerwatch.probes.credential_file import read_token
from peerwatch.probes.errors import FabricUnavailable
from peerwatch.probes.report import Report, ReportKind

EXIT_FAILED, EXIT_USAGE, EXIT_UNAUTHORIZED, EXIT_REJECTED = 1, 2, 3, 4
_DEFAULTS = ProbeSettings.model_construct()
_MIB = 1 << 20

# (flag, settings field, type, help) - help gets "(default: X; env NAME)" appended.
_OPTIONS: list[tuple[str, str, Any, str]] = [
    ("--server", "server_url", str, "server base URL"),
    ("--token-file", "token_file", str,
     "file holding this host's probe credential (`peerwatch token issue --host H`); "
     f"{ENV_PREFIX}TOKEN, when set, is used instead"),
    ("--fabric", "fabric", str, "auto or nvml (the real GPUs; an error without them), "
                                "or simulated:<preset> (hgx8, h200x2, mesh4, pcie4)"),
    ("--hostname", "hostname", str, "host name to report instead of the fabric's own"),
    ("--spool-dir", "spool_dir", str, "directory holding undelivered reports"),
    ("--spool-max-bytes", "spool_max_bytes", int, "spool size bound; the oldest are dropped"),
    ("--inventory-interval", "inventory_interval_s", float, "seconds between inventory reports"),
    ("--sweep-interval", "sweep_interval_s", float, "seconds between transfer sweeps"),
    ("--sweep-jitter", "sweep_jitter_s", float, "each sweep waits interval + U(0, jitter) s"),
    ("--idle-max-utilization", "idle_max_utilization_pct", float,
     "a GPU above this utilisation %% (or with any compute process) is busy and skipped"),
    ("--watchdog-timeout", "watchdog_timeout_s", float,
     "seconds one transfer test may take before it is abandoned as hung"),
    ("--request-timeout", "request_timeout_s", float, "seconds to wait for the server"),
    ("--backoff-initial", "backoff_initial_s", float,
     "seconds to wait before resending after the server failed; doubles on each failure"),
    ("--backoff-max", "backoff_max_s", float, "the longest wait between resends, in seconds"),
    ("--job-mapping-dir", "job_mapping_dir", str,
     "directory of per-GPU job files (dcgm-exporter's --hpc-job-mapping-dir convention, "
     "written by deploy/slurm/peerwatch-prolog.sh); '' to not read one"),
    ("--kubelet-socket", "kubelet_socket", str,
     "the kubelet's pod-resources socket (which pod holds each GPU); '' to not read it"),
    ("--metrics-port", "metrics_port", int,
     "serve this host's per-link/GPU/pair series on http://ADDR:PORT/metrics for Prometheus"),
    ("--metrics-addr", "metrics_addr", str, "address the --metrics-port server listens on"),
    ("--metrics-tests", "metrics_tests", str,
     "comma-separated tests whose series /metrics exposes"),
    ("--opt-in-tests", "opt_in_tests", str,
     "comma-separated opt-in tests added to every sweep (gdr_loopback: GPUDirect RDMA "
     "through each GPU's nearest NIC)"),
    ("--kmsg-path", "kmsg_path", str,
     "kernel log device read for Xid/SXid lines (docs/events.md)"),
    ("--expected-gpus", "expected_gpus", int,
     "GPUs this host should have (e.g. its Slurm Gres count): fewer listed is GPUMissing "
     "from the first report (docs/verdict-truth.md)"),
]


def _default_text(field: str) -> str:
    value = getattr(_DEFAULTS, field, None)
    if field == "hostname":
        shown = "the fabric's host name"
    elif field == "metrics_port":
        shown = "not served"
    elif isinstance(value, list):
        shown = ",".join(str(v) for v in value)
    else:
        shown = str(value)
    return f"(default: {shown}; env {ENV_PREFIX}{field.upper()})"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "probe", help="measure this host's GPU fabric and report to a server",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, field, kind, text in _OPTIONS:
        parser.add_argument(flag, dest=field, type=kind, default=None,
                            help=f"{text} {_default_text(field)}")
    refuse_token_option(parser)
    parser.add_argument("--once", action="store_true",
                        help="run one sweep, send or spool it, and exit (default: loop forever)")
    parser.add_argument("--force", action="store_true", default=None,
                        help="probe busy GPUs too, for maintenance windows "
                             f"(default: skip them; env {ENV_PREFIX}FORCE)")
    parser.add_argument("--nvls", action="store_true", default=None,
                        help="also run NCCL all-reduce over NVLink SHARP (nvls_allreduce): the "
                             "probe's NCCL then runs with NCCL_NVLS_ENABLE=1 (default: off, "
                             f"multicast stays off; env {ENV_PREFIX}NVLS)")
    parser.add_argument("--no-events", dest="events", action="store_false", default=None,
                        help="read no Xid/SXid events (NVML events, the kernel log) "
                             f"(default: read them; env {ENV_PREFIX}EVENTS)")
    parser.add_argument("--log-level", default="INFO",
                        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="logging verbosity (default: INFO)")
    parser.set_defaults(func=run)


def settings_from(args: argparse.Namespace) -> ProbeSettings:
    """Command line over environment over defaults; a bad value is a one-line usage error."""
    given = {field: getattr(args, field) for _, field, _, _ in _OPTIONS}
    given["force"] = args.force
    given["events"] = args.events
    given["nvls"] = args.nvls
    given = {k: v for k, v in given.items() if v is not None}
    flags = {field: flag for flag, field, _, _ in _OPTIONS if field in given}
    flags |= {field: flag for field, flag in (("force", "--force"), ("events", "--no-events"),
                                              ("nvls", "--nvls")) if field in given}
    warn_unknown_names()
    settings = read_settings(ProbeSettings, flags, **given)
    if not settings.token:
        settings.token = read_token(settings.token_file, f"{ENV_PREFIX}TOKEN", "--token-file")
    return settings


def run(args: argparse.Namespace) -> int:
    configure_logging(args.log_level)
    settings = settings_from(args)
    with ExitStack() as stack:
        try:
            runtime = stack.enter_context(open_runtime(settings))
        except (FabricUnavailable, SpoolLocked) as exc:
            print(f"peerwatch probe: error: {exc}", file=sys.stderr)
            return EXIT_FAILED
        if args.once:
            return run_once(runtime)
        with stop_on_signals(runtime.worker.stop):
            runtime.worker.run()
        print(f"peerwatch probe: stopped; {len(runtime.outbox.spool)} report(s) in "
              f"{settings.spool_dir}", file=sys.stderr)
        return 0


def run_once(runtime: ProbeRuntime) -> int:
    outbox = runtime.outbox
    while len(outbox.spool) and outbox.ready() and outbox.replay() > 0:
        pass  # deliver the backlog first, so this report is not queued behind it
    report, submitted = runtime.worker.run_pass(ReportKind.SWEEP)
    if report is None or submitted is None:
        error = next((r.last_error for r in runtime.worker.stats.steps.values()
                      if r.last_error), "unknown error")
        print(f"peerwatch probe: the sweep failed: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(describe_report(report))
    print(describe_delivery(submitted, runtime))
    return exit_status(submitted)


def describe_report(report: Report) -> str:
    cost = report.cost
    failed = sum(1 for r in report.results if r.error)
    skipped = ", ".join(f"GPU{s.gpu} ({s.reason})" for s in cost.skipped) or "none"
    return (
        f"sweep report {report.report_id} from {report.host.hostname} ({report.host.fabric}): "
        f"{len(report.inventory.gpus)} GPUs, {len(report.results)} results "
        f"({failed} failed), {len(report.errors)} probe errors\n"
        f"  sweep GPU time {cost.gpu_time_s:.4f} s, wall time {cost.wall_time_s:.3f} s, "
        f"device memory max {cost.device_memory_bytes_max / _MIB:.1f} MiB\n"
        f"  agent CPU {cost.agent_cpu_s:.3f} s, agent memory (RSS) "
        f"{cost.agent_rss_bytes / _MIB:.1f} MiB\n"
        f"  skipped GPUs: {skipped}; dropped reports announced: {cost.dropped_reports}")


def describe_delivery(submitted: Submitted, runtime: ProbeRuntime) -> str:
    spool = runtime.outbox.spool
    answer = (submitted.answer.describe() if submitted.answer else
              "queued behind older reports, or the server is in backoff")
    if submitted.delivery is Delivery.DELIVERED:
        return f"delivered to {runtime.outbox.sender.url} ({answer})"
    if submitted.delivery is Delivery.SPOOLED:
        return (f"not delivered ({answer}); kept in the spool {spool.directory} "
                f"({len(spool)} waiting)")
    if submitted.delivery is Delivery.SET_ASIDE:
        return f"the server rejected the report ({answer}); set aside in {spool.directory}"
    return f"the report could not be delivered nor spooled ({answer})"


def exit_status(submitted: Submitted) -> int:
    if submitted.answer is not None and submitted.answer.outcome is Outcome.UNAUTHORIZED:
        return EXIT_UNAUTHORIZED
    return {Delivery.DELIVERED: 0, Delivery.SPOOLED: 0, Delivery.SET_ASIDE: EXIT_REJECTED,
            Delivery.LOST: EXIT_FAILED}[submitted.delivery]
