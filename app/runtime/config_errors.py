"""A configuration value that is wrong, in one line: the variable, what it was given (never a
secret), and what it accepts.

pydantic's ValidationError is a page (one block per field, a URL each) and a traceback when
nobody catches it; an operator who typed `PEERWATCH_STALE_AFTER_S=abc` needs one line:
`PEERWATCH_STALE_AFTER_S='abc': expected a number > 0`. What a field accepts is read from its
type and its constraints, so a new field is described without a word written here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, TypeVar, Union, get_args, get_origin

import annotated_types as at
from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, SettingsError

S = TypeVar("S", bound=BaseSettings)
SECRET_WORDS = ("token", "secret", "password", "key")
SHOWN_MAX = 60
_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")
_BOUNDS = ((at.Gt, ">", "gt"), (at.Ge, ">=", "ge"), (at.Lt, "<", "lt"), (at.Le, "<=", "le"))


class ConfigError(ValueError):
    """A configuration value peerwatch cannot start with; the message is one line."""


def read_settings(cls: type[S], given: Mapping[str, str] | None = None, **values: Any) -> S:
    """`cls(**values)` (the rest from the environment), or ConfigError in one line.

    `given` names where an explicit value came from (`{"database_url": "--database-url"}`),
    so its error names the option rather than the environment variable."""
    try:
        return cls(**values)
    except ValidationError as exc:
        raise config_error(exc, cls, given or {}) from None
    except SettingsError as exc:  # a JSON-valued variable that is not JSON
        raise source_error(exc, cls) from None


def env_name(cls: type[BaseSettings], field: str, environ: Mapping[str, str]) -> str:
    """The variable that sets `field`, as it is spelt in the environment if it is there
    (pydantic-settings matches names case-insensitively)."""
    wanted = f"{cls.model_config.get('env_prefix', '')}{field}".upper()
    return next((k for k in environ if k.upper() == wanted), wanted)


def config_error(exc: ValidationError, cls: type[BaseSettings], given: Mapping[str, str],
                 environ: Mapping[str, str] | None = None) -> ConfigError:
    environ = os.environ if environ is None else environ
    lines = [_problem(error, cls, given, environ) for error in exc.errors()]
    return ConfigError("; ".join(dict.fromkeys(lines)))


def source_error(exc: SettingsError, cls: type[BaseSettings],
                 environ: Mapping[str, str] | None = None) -> ConfigError:
    """pydantic-settings' own error (a variable it must decode as JSON and cannot)."""
    environ = os.environ if environ is None else environ
    found = re.search(r'field "(\w+)"', str(exc))
    if not found or found.group(1) not in cls.model_fields:
        return ConfigError(" ".join(str(exc).split()))
    field = found.group(1)
    name = env_name(cls, field, environ)
    return ConfigError(f"{name}={shown(field, environ.get(name, ''))}: expected "
                       f"{accepts(cls.model_fields[field])}")


def _problem(error: Any, cls: type[BaseSettings], given: Mapping[str, str],
             environ: Mapping[str, str]) -> str:
    loc = error.get("loc") or ()
    message = str(error.get("msg", "")).removeprefix("Value error, ")
    if not loc or loc[0] not in cls.model_fields:
        return message
    field = str(loc[0])
    if field in given:
        name, value = given[field], error.get("input")
    else:
        name = env_name(cls, field, environ)
        value = environ.get(name, error.get("input"))
    said = message if error.get("type") == "value_error" else \
        f"expected {accepts(cls.model_fields[field])}"
    return f"{name}={shown(field, value)}: {said}"


def shown(field: str, value: Any) -> str:
    """The value as the line shows it: quoted, escaped onto one line, cut short; a secret
    never, a database URL without its password."""
    if any(word in field.lower() for word in SECRET_WORDS):
        return "(hidden)"
    text = _PASSWORD.sub(r"\1***@", str(value))
    quoted = ascii(text)
    return quoted if len(quoted) <= SHOWN_MAX else quoted[:SHOWN_MAX - 4] + "...'"


def accepts(field: FieldInfo) -> str:
    """What a field takes, from its type and bounds: "a number > 0", "true or false"."""
    annotation, optional = field.annotation, False
    if get_origin(annotation) in (Union, UnionType):
        kept = [a for a in get_args(annotation) if a is not NoneType]
        optional = len(kept) < len(get_args(annotation))
        annotation = kept[0] if len(kept) == 1 else annotation
    bounds = [f"{sign} {getattr(m, attr)}" for m in field.metadata
              for kind, sign, attr in _BOUNDS if isinstance(m, kind)]
    text = _kind(annotation) + (" " + " and ".join(bounds) if bounds else "")
    if any(isinstance(m, at.MinLen) and m.min_length > 0 for m in field.metadata):
        text = f"a non-empty {text[2:]}" if text.startswith("a ") else f"non-empty {text}"
    return text + (" (empty: unset)" if optional else "")


def _kind(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is bool:
        return "true or false (also 1/0, yes/no, on/off)"
    if annotation is int:
        return "an integer"
    if annotation is float:
        return "a number"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "one of " + ", ".join(str(m.value) for m in annotation)
    if origin is list:
        item = _kind(args[0]) if args else "text"
        return "a comma-separated list" + ("" if item == "text" else f", each {item}")
    if origin is dict:
        return "a JSON object" + (f" of {_kind(args[1]).removeprefix('a ')}s"
                                  if len(args) == 2 else "")
    if annotation is Path:
        return "a path"
    return "text"
