"""Logging for every `peerwatch` command: one line per event, with time, level and logger.
A multi-line message or a traceback is folded into its event's line (`OneLineFormatter`).

`serve` hands the same configuration to uvicorn (`uvicorn_log_config`), so its own lines,
the access log, the app's and the in-process probe's all look alike, whether or not the
local probe runs. The access log never shows a secret sent in a query string: values of
parameters named like a credential (token, key, secret, password, auth, signature) are
replaced by `REDACTED` before the line is written.
"""

from __future__ import annotations

import logging
import logging.config
import re
from typing import Any

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
REDACTED = "REDACTED"
_SECRET_PARAM = re.compile(
    r"(?i)([?&][^=&#]*(?:token|key|secret|passw|auth|sig)[^=&#]*=)[^&#]*")


def redact_query(path: str) -> str:
    """`path` with the values of credential-like query parameters replaced."""
    return _SECRET_PARAM.sub(rf"\g<1>{REDACTED}", path) if "?" in path else path


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
            record.args = (*args[:2], redact_query(args[2]), *args[3:])
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
