"""User errors as one line: what went wrong and what to do, never a traceback.

`explain(exc)` turns the errors a person causes or meets at the command line (no GPUs where
NVML was asked for, a database that is unreachable, missing or named by a nonsense URL, the
server's packages not installed) into one line for `app.cli.main` to print with a non-zero
exit. Anything else is a bug and keeps its traceback. SQLAlchemy and Alembic are looked up in
`sys.modules` rather than imported: an error from them means they are loaded, and a probe-only
install has neither.
"""

from __future__ import annotations

import sys
from typing import Any

from peerwatch.probes.errors import FabricUnavailable

# Top-level modules of the `server` extra (pyproject.toml): missing means a probe-only install.
SERVER_MODULES = frozenset({"fastapi", "starlette", "uvicorn", "sqlalchemy", "alembic", "plotly",
                            "psycopg", "psutil", "fastapi_offline", "orjson", "re2",
                            "httptools", "uvloop"})
SERVER_EXTRA_HINT = "pip install 'peerwatch[server]'"


def one_line(text: object) -> str:
    """Whitespace (a driver's multi-line message) folded into single spaces."""
    return " ".join(str(text).split())


def missing_server_module(exc: BaseException) -> str | None:
    """The server package `exc` is missing, when it is one of SERVER_MODULES."""
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        if top in SERVER_MODULES:
            return top
    return None


def _database_error(exc: BaseException) -> str | None:
    sa_exc = sys.modules.get("sqlalchemy.exc")
    if sa_exc is None:
        return None
    if isinstance(exc, sa_exc.NoSuchModuleError):
        return f"unsupported database URL ({one_line(exc)}); use sqlite:///PATH or " \
               "postgresql://USER@HOST:PORT/DB"
    if isinstance(exc, sa_exc.ArgumentError):
        return f"invalid database URL: {one_line(exc)}"
    if isinstance(exc, sa_exc.DBAPIError):
        cause = exc.orig if exc.orig is not None else exc
        return f"cannot use the database: {one_line(cause)}"
    return None


def _migration_error(exc: BaseException) -> str | None:
    alembic_exc = sys.modules.get("alembic.util.exc")
    if alembic_exc is not None and isinstance(exc, alembic_exc.CommandError):
        return f"migration failed: {one_line(exc)}"
    return None


def _settings_classes() -> list[Any]:
    """Every settings class loaded (pydantic-settings is, when one of them raised)."""
    base = getattr(sys.modules.get("pydantic_settings"), "BaseSettings", None)
    found, todo = [], list(base.__subclasses__()) if base else []
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def configuration_error(exc: BaseException) -> str | None:
    """One line for a configuration value that is wrong (exit 2, as a usage error): the
    ConfigError a command raised, or a settings class's own error if one was built without
    `read_settings` (`app/runtime/config_errors.py` says it either way)."""
    config_errors = sys.modules.get("peerwatch.app.runtime.config_errors")
    if config_errors is None:
        return None
    if isinstance(exc, config_errors.ConfigError):
        return str(exc)
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(exc, pydantic.ValidationError):
        cls = next((c for c in _settings_classes() if c.__name__ == exc.title), None)
        return None if cls is None else str(config_errors.config_error(exc, cls, {}))
    if isinstance(exc, config_errors.SettingsError):
        for cls in _settings_classes():
            if any(f'field "{field}"' in str(exc) for field in cls.model_fields):
                return str(config_errors.source_error(exc, cls))
    return None


def explain(exc: BaseException) -> str | None:
    """One line for a user error, None for anything else (a bug: let it raise)."""
    if isinstance(exc, FabricUnavailable):
        return one_line(exc)
    missing = missing_server_module(exc)
    if missing:
        return (f"this command needs the server's packages ({missing} is not installed): "
                f"{SERVER_EXTRA_HINT}")
    if isinstance(exc, OSError) and exc.filename:  # e.g. a SQLite path that cannot be made
        return f"{exc.strerror or one_line(exc)}: {exc.filename}"
    return _database_error(exc) or _migration_error(exc)
