"""Shared by the /metrics tests: run the real `promtool check metrics`, count series."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import require


def promtool() -> str:
    path = shutil.which("promtool") or "/usr/bin/promtool"
    require(Path(path).exists(), "promtool (Debian package prometheus)")
    return path


def promtool_check(exposition: str) -> str:
    """Lint problems promtool reports (empty when clean); fails the test if it cannot run."""
    done = subprocess.run([promtool(), "check", "metrics"], input=exposition,
                          capture_output=True, text=True, timeout=60)
    problems = (done.stdout + done.stderr).strip()
    assert done.returncode == 0 or problems, "promtool failed without saying why"
    return "" if done.returncode == 0 else problems


def series(exposition: str) -> list[str]:
    """Sample lines (one per series) of a text exposition."""
    return [line for line in exposition.splitlines() if line and not line.startswith("#")]


def names(exposition: str) -> set[str]:
    return {line.split("{")[0].split(" ")[0] for line in series(exposition)}


def values(exposition: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of an exposition, keyed by name and label set, parsed by client_python."""
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(exposition)
        for s in family.samples
    }


def value(exposition: str, name: str, **labels: str) -> float | None:
    return values(exposition).get((name, frozenset(labels.items())))
