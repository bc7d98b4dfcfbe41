"""The `PEERWATCH_*` environment as the commands read it: every value checked before
anything starts, a wrong one said in one line (exit 2), an unknown name warned about with
the closest known one (`PEERWATCH_DATABSE_URL`: did you mean PEERWATCH_DATABASE_URL?).

A misspelt name is otherwise silent: the setting keeps its default (a fleet's PostgreSQL
URL misspelt runs the server on a local SQLite file). The known names are every field of the
three settings classes and `OTHER_NAMES`, the variables other parts read (deploy scripts,
the drain command, the tests and benchmarks); tests/app/cli/test_environment.py fails when
a `PEERWATCH_*` name appears in the repository and in neither.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Mapping

from pydantic_settings import BaseSettings

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.config_errors import read_settings
from peerwatch.probes.config import ProbeSettings

log = logging.getLogger("peerwatch.config")

PREFIX = "PEERWATCH_"
SETTINGS_CLASSES: tuple[type[BaseSettings], ...] = (Settings, AlertingSettings, ProbeSettings)

# Read by other parts than the settings classes, each where its comment says.
OTHER_NAMES = frozenset({
    # deploy/slurm/*.sh and peerwatch-slurm-health.py, /etc/default/peerwatch
    "PEERWATCH_URL", "PEERWATCH_TOKEN_FILE", "PEERWATCH_BIN",
    "PEERWATCH_FABRIC", "PEERWATCH_HOSTNAME", "PEERWATCH_GATE", "PEERWATCH_GATE_TIMEOUT",
    "PEERWATCH_HEALTH_TIMEOUT", "PEERWATCH_JOB_MAPPING_DIR", "PEERWATCH_SNAPSHOT_SPOOL",
    "PEERWATCH_SNAPSHOT_TIMEOUT",
    # a job's own request to the TaskProlog (sbatch --export)
    "PEERWATCH_PATTERN", "PEERWATCH_GPUS",
    # the client commands: drain, maintenance, snapshot (app/cli/credential.py)
    "PEERWATCH_SERVER_URL", "PEERWATCH_DRAIN_POLICY", "PEERWATCH_DRAIN_TOKEN",
    "PEERWATCH_GATE_TOKEN", "PEERWATCH_GATE_TOKEN_FILE",
    "PEERWATCH_RUN_DIR",  # drain --health-check's per-node round lock (app/drain/round_lock.py)
    # a pair job's rank (app/pairs/rank.py, app/cli/commands/pairs.py; the Kubernetes Job)
    "PEERWATCH_PAIRS_NODE", "PEERWATCH_PAIRS_SIMNET",
    # docker-compose.yml
    "PEERWATCH_BIND",
    # no longer read: the server says so itself (app/alerting/settings.py)
    "PEERWATCH_METRICS_TESTS",
    # the tests and benchmarks
    "PEERWATCH_REQUIRE_SERVICES", "PEERWATCH_TEST_PG_PORT", "PEERWATCH_CHROMIUM",
    "PEERWATCH_FUZZ_EXAMPLES", "PEERWATCH_FUZZ_RANDOM", "PEERWATCH_FUZZ_STATEFUL_EXAMPLES",
    "PEERWATCH_BENCH_HOSTS", "PEERWATCH_BENCH_SIZE",
    "PEERWATCH_CALLGRIND_OUT",  # bench/helpers/instructions.py: the counted child's dumps
})


def settings_names() -> frozenset[str]:
    """Every variable a settings class reads."""
    return frozenset(f"{cls.model_config.get('env_prefix', '')}{field}".upper()
                     for cls in SETTINGS_CLASSES for field in cls.model_fields)


def known_names() -> frozenset[str]:
    return settings_names() | OTHER_NAMES


def unknown_names(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """Each `PEERWATCH_*` variable no part reads, with the closest known name (or None)."""
    known = known_names()
    rests = {name.removeprefix(PREFIX): name for name in known}
    found = []
    for name in sorted(environ):
        upper = name.upper()
        if upper.startswith(PREFIX) and upper not in known:  # likeness past the prefix
            close = difflib.get_close_matches(upper.removeprefix(PREFIX), rests, n=1,
                                              cutoff=0.75)
            found.append((name, rests[close[0]] if close else None))
    return found


def warn_unknown_names(environ: Mapping[str, str] | None = None) -> None:
    for name, close in unknown_names(os.environ if environ is None else environ):
        hint = f"did you mean {close}?" if close else "no part of peerwatch reads it"
        log.warning("%s is not a peerwatch setting (ignored): %s", name, hint)


def check_server_environment(warn: bool = True) -> None:
    """Unknown names warned about; alerting's settings checked now, though the judge reads
    them later (in its own process, which must not be the first to find a bad value)."""
    if warn:
        warn_unknown_names()
    read_settings(AlertingSettings)


def server_settings(database_url: str | None = None, *, warn: bool = True) -> Settings:
    """The server's settings, every value checked (`check_server_environment`): a wrong one
    is ConfigError in one line. `database_url` (the `--database-url` option) overrides the
    environment's."""
    check_server_environment(warn)
    if not database_url:
        return read_settings(Settings)
    return read_settings(Settings, {"database_url": "--database-url"},
                         database_url=database_url)
