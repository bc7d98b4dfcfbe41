"""Logging for every `peerwatch` command: one line per event, with time, level and logger.
A multi-line message or a traceback is folded into its event's line (`OneLineFormatter`).

`serve` hands the same configuration to uvicorn (`uvicorn_log_config`), so its own lines,
the access log, the app's and the in-process probe's all look alike, whether or not the
local probe runs. The access log never shows a secret sent in a query string: on a read, the
values of parameters whose decoded name is credential-like (token, bearer, pw, password,
secret, key, auth, signature ...) are replaced by `REDACTED`; on a write (every route that
takes a credential) the query string is not logged at all.
"""

from __future__ import annotations

import logging
import logging.config
import re
from typing import Any
from urllib.parse import unquote_plus

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
REDACTED = "REDACTED"
# A parameter is secret-like when its percent-decoded, lowercased name holds any of these.
SECRET_WORDS = ("token", "bearer", "pw", "pass", "secret", "key", "auth", "sig", "cred",
                "session", "cookie", "jwt", "otp")
# Every route that takes a credential is a write; reads are open. A write's query string is
# never logged at all: no spelling of a name can smuggle a secret into the log there.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_SEPARATORS = re.compile(r"([&;])")


def _secret_name(name: str) -> bool:
    decoded = unquote_plus(name).lower()
    return any(word in decoded for word in SECRET_WORDS)


def _redact_part(part: str) -> str:
    name, eq, _value = part.partition("=")
    return f"{name}={REDACTED}" if eq and _secret_name(name) else part


def redact_query(path: str, method: str = "GET") -> str:
    """`path` as the access log may show it: on a write, without its query string; on a
    read, with the value of every secret-like parameter replaced. Names are judged by
    meaning, not spelling: percent-decoded (`to%6Ben`, `%74oken`), case-folded, and split
    on both `&` and `;`."""
    base, mark, query = path.partition("?")
    if not mark:
        return path
    if method.upper() not in SAFE_METHODS:
        return base
    return f"{base}?" + "".join(
        part if _SEPARATORS.fullmatch(part) else _redact_part(part)
        for part in _SEPARATORS.split(query))


class OneLineFormatter(logging.Formatter):
    """Each event on one line: newlines in a message or a traceback become " | ", so a log
    shipper never splits one event into several (or glues a traceback to the next event)."""

    def format(self, record: logging.LogRecord) -> str:
        return " | ".join(part for part in super().format(record).splitlines() if part.strip())


class RedactQuerySecrets(logging.Filter):
    """For uvicorn's access log, whose record args are (client, method, path, version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            method = args[1] if isinstance(args[1], str) else "GET"
            record.args = (*args[:2], redact_query(args[2], method), *args[3:])
        return True


def log_config(level: str = "info") -> dict[str, Any]:
    """A `logging.config.dictConfig` for the whole process (uvicorn's loggers included)."""
    level = level.upper()
    stream = {"class": "logging.StreamHandler", "formatter": "plain",
              "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"redact": {"()": RedactQuerySecrets}},
        "formatters": {"plain": {"()": OneLineFormatter, "format": FORMAT}},
        "handlers": {"default": stream, "access": {**stream, "filters": ["redact"]}},
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": level, "propagate": False},
            "uvicorn.error": {"level": level},
            "uvicorn.access": {"handlers": ["access"], "level": level, "propagate": False},
        },
        "root": {"handlers": ["default"], "level": level},
    }


def configure_logging(level: str = "info") -> dict[str, Any]:
    """Configure this process's logging; returns the config (for uvicorn's `log_config`).

    Where the root logger already has handlers (an embedding program, pytest) they are kept
    and only its level and uvicorn's loggers are set."""
    config = log_config(level)
    root = logging.getLogger()
    if root.handlers:
        del config["root"]
        root.setLevel(level.upper())
    logging.config.dictConfig(config)
    return config
