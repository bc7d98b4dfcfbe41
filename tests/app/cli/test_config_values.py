"""Every `PEERWATCH_*` setting the server reads, given a wrong value, stops `peerwatch serve`
with one line naming the variable and what it accepts, and exit status 2: no traceback, no
server started.

The wrong values are made from each field's type and bounds (a word for a number, a number
past a bound, `maybe` for a switch, a name outside an enumeration, text that is not JSON),
so a field added later is tried without a line written here. The server's own settings and
alerting's are both read by `serve` (alerting's again by its judge process)."""

from __future__ import annotations

import os
import subprocess
import sys
from enum import Enum
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

import annotated_types as at
import pytest
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from peerwatch.app.alerting.settings import AlertingSettings
from peerwatch.app.cli import main
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.config_errors import accepts

SERVER_CLASSES: tuple[type[BaseSettings], ...] = (Settings, AlertingSettings)
# Text fields with a validator of their own: what no annotation can tell.
BAD_TEXT = {"database_url": ["mysql://root:hunter2@db.example/pw", "nonsense", "sqlite"]}
UNUSED_PORT = "9"  # never bound: a wrong value stops serve before it listens


def _plain(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, UnionType):
        kept = [a for a in get_args(annotation) if a is not NoneType]
        return kept[0] if len(kept) == 1 else annotation
    return annotation


def _past_bounds(field: FieldInfo, integer: bool) -> list[str]:
    step = 1 if integer else 0.5
    out = []
    for m in field.metadata:
        if isinstance(m, at.Ge):
            out.append(str(m.ge - step))
        elif isinstance(m, at.Gt):
            out.append(str(m.gt))
        elif isinstance(m, at.Le):
            out.append(str(m.le + step))
        elif isinstance(m, at.Lt):
            out.append(str(m.lt))
    return out


def wrong_values(name: str, field: FieldInfo) -> list[str]:
    """Values the field must refuse, from its type and bounds; [] for free text."""
    kind = _plain(field.annotation)
    if kind is bool:
        return ["maybe", "2"]
    if kind is int:
        return ["abc", "1.5", *_past_bounds(field, integer=True)]
    if kind is float:
        return ["abc", "1,5", *_past_bounds(field, integer=False)]
    if isinstance(kind, type) and issubclass(kind, Enum):
        return ["bogus"]
    if get_origin(kind) is dict:
        return ["{not json", '{"NVLinkDown": "soon"}', "[1, 2]"]
    return BAD_TEXT.get(name, [])


CASES = [(cls, name, value) for cls in SERVER_CLASSES
         for name, field in cls.model_fields.items()
         for value in wrong_values(name, field)]
FREE = sorted(name for cls in SERVER_CLASSES for name, field in cls.model_fields.items()
              if not wrong_values(name, field))


def test_only_text_and_paths_take_any_value() -> None:
    """Every field is tried but those whose type takes any text (paths, tokens, URLs of
    other services); a new field of any other type gets wrong values by itself."""
    for name in FREE:
        cls = next(c for c in SERVER_CLASSES if name in c.model_fields)
        kind = _plain(cls.model_fields[name].annotation)
        assert kind in (str, Path) or get_args(kind) == (str,), (name, kind)
    assert len(CASES) > 100


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.upper().startswith("PEERWATCH_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PEERWATCH_DATA_DIR", str(tmp_path))
    return monkeypatch


@pytest.mark.parametrize(("cls", "name", "value"), CASES,
                         ids=[f"{n}={v[:20]}" for _, n, v in CASES])
def test_a_wrong_value_stops_serve_in_one_line(cls: type[BaseSettings], name: str, value: str,
                                              clean_env: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    variable = f"PEERWATCH_{name.upper()}"
    clean_env.setenv(variable, value)
    status = main(["serve", "--no-local-probe", "--port", UNUSED_PORT])
    err = capsys.readouterr().err
    assert status == 2, err
    [line] = err.splitlines()
    assert line.startswith(f"peerwatch serve: error: {variable}="), line
    if name in BAD_TEXT:
        assert "use sqlite:///PATH or postgresql+psycopg://" in line
        assert "hunter2" not in line  # a password never reaches a terminal or a log
    else:
        assert line.endswith(f": expected {accepts(cls.model_fields[name])}"), line


# The cases, through the real command: a fresh process, as an operator runs it.
@pytest.mark.parametrize(("env", "says"), [
    ({"PEERWATCH_STALE_AFTER_S": "abc"}, "PEERWATCH_STALE_AFTER_S='abc': expected a number > 0"),
    ({"PEERWATCH_STALE_AFTER_S": "-5"}, "PEERWATCH_STALE_AFTER_S='-5': expected a number > 0"),
    ({"PEERWATCH_INGEST_CONCURRENCY": "0"},
     "PEERWATCH_INGEST_CONCURRENCY='0': expected an integer >= 1"),
    ({"PEERWATCH_PCIE_CHECK_GENERATION": "maybe"},
     "PEERWATCH_PCIE_CHECK_GENERATION='maybe': expected true or false"),
    ({"PEERWATCH_DATABASE_URL": "mysql://pw@db/pw"},
     "PEERWATCH_DATABASE_URL='mysql://pw@db/pw': 'mysql' is not supported; use sqlite:///PATH "
     "or postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB"),
])
@pytest.mark.parametrize("command", [["serve", "--no-local-probe", "--port", UNUSED_PORT],
                                     ["migrate"], ["judge"]])
def test_the_commands_that_read_settings_say_it_in_one_line(
        command: list[str], env: dict[str, str], says: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "peerwatch.app.cli", *command], timeout=120, text=True,
        capture_output=True, env={**_without_peerwatch(), "PEERWATCH_DATA_DIR": str(tmp_path),
                                  **env})
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"peerwatch {command[0]}: error: {says}"), line
    assert not (tmp_path / "peerwatch.db").exists()  # nothing was started


def test_demo_says_a_wrong_alerting_value_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "peerwatch.app.cli", "demo", "--data-dir", str(tmp_path),
         "--port", UNUSED_PORT], timeout=120, text=True, capture_output=True,
        env={**_without_peerwatch(), "PEERWATCH_ALERT_EVAL_INTERVAL_S": "often"})
    assert done.returncode == 2, done.stderr
    assert done.stderr == ("peerwatch demo: error: PEERWATCH_ALERT_EVAL_INTERVAL_S='often': "
                           "expected a number >= 0\n")


def test_a_database_url_option_is_named_as_the_option(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "peerwatch.app.cli", "migrate", "--database-url",
         "mysql://root:hunter2@db/pw"], timeout=120, text=True, capture_output=True,
        env=_without_peerwatch())
    assert done.returncode == 2
    assert done.stderr == ("peerwatch migrate: error: --database-url='mysql://root:***@db/pw': "
                           "'mysql' is not supported; use sqlite:///PATH or "
                           "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB\n")


def _without_peerwatch() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.upper().startswith("PEERWATCH_")}
