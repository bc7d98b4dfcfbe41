"""The PromQL twin of a rule, declared beside its check, and the rules file written from them.

A team that alerts in Prometheus gets the server's rules as PromQL over the probe agents' and
the server's /metrics (deploy/prometheus/peerwatch-rules.yml). Each server rule carries its
twins (`Rule.twins`: one alerting rule each, the alertname and severity the rule's own) and
the series they read (`Rule.series`), so that a rule is declared in one place; the file is
`rules_file(...)` of those declarations, and tests/deploy proves the committed file equal.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

WIDTH = 92  # comment lines
PLAIN = re.compile(r"[A-Za-z0-9_]+")
SERIES = re.compile(r"\bpeerwatch_[a-z0-9_]+")
RECORDED = re.compile(r"\bpeerwatch:[a-z0-9_]+")


@dataclass(frozen=True)
class Twin:
    """One Prometheus alerting rule: its expression, `for` (None: written without one),
    labels besides alertname and severity, and annotations; `comment` is written above the
    rule, `note` under its name."""

    expr: str
    annotations: Mapping[str, str]
    for_: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    note: str = ""
    comment: str = ""


@dataclass(frozen=True)
class Record:
    """A recording rule the twins share: what several of them read once."""

    record: str
    expr: str
    comment: str = ""


@dataclass(frozen=True)
class PromAlert:
    """An alerting rule as written: a twin with its rule's name and severity."""

    name: str
    severity: str
    twin: Twin


@dataclass(frozen=True)
class Group:
    """A rule group of the file; `comment` is written above it."""

    name: str
    rules: tuple[Record | PromAlert, ...]
    interval: str | None = None
    comment: str = ""


def series_read(expr: str, records: Iterable[Record]) -> frozenset[str]:
    """The /metrics series an expression reads, itself or through the recording rules it
    reads (and theirs)."""
    by_name = {r.record: r.expr for r in records}
    texts, names = [expr], set[str]()
    while texts:
        text = texts.pop()
        for name in set(RECORDED.findall(text)) - names:
            names.add(name)
            texts.append(by_name[name])
        names.update(SERIES.findall(text))
    return frozenset(n for n in names if n.startswith("peerwatch_"))


def rules_file(header: str, groups: Iterable[Group]) -> str:
    """The rules file's text: the header's comment lines, then each group."""
    out = _comment(header, 0) + ["groups:"]
    for i, group in enumerate(groups):
        out += [""] if i else []
        out += _group(group)
    return "\n".join(out) + "\n"


def _group(group: Group) -> list[str]:
    out = _comment(group.comment, 2) + [f"  - name: {group.name}"]
    out += [f"    interval: {group.interval}"] if group.interval else []
    out.append("    rules:")
    for i, rule in enumerate(group.rules):
        out += [""] if i else []
        out += _record(rule) if isinstance(rule, Record) else _alert(rule)
    return out


def _record(rule: Record) -> list[str]:
    return [*_comment(rule.comment, 6), f"      - record: {rule.record}", *_expr(rule.expr)]


def _alert(rule: PromAlert) -> list[str]:
    twin = rule.twin
    out = [*_comment(twin.comment, 6), f"      - alert: {rule.name}", *_comment(twin.note, 8)]
    out += _expr(twin.expr)
    out += [f"        for: {twin.for_}"] if twin.for_ is not None else []
    out.append("        labels:")
    out += [f"          {k}: {_label(v)}" for k, v in {"severity": rule.severity,
                                                       **twin.labels}.items()]
    out.append("        annotations:")
    out += [f"          {k}: {_quoted(v)}" for k, v in twin.annotations.items()]
    return out


def _expr(expr: str) -> list[str]:
    """One line plain; several (ending in a newline) as a literal block."""
    if "\n" not in expr:
        return [f"        expr: {expr}"]
    return ["        expr: |", *(f"          {line}" for line in expr.rstrip("\n").split("\n"))]


def _comment(text: str, indent: int) -> list[str]:
    """Comment lines wrapped to the file's width; a line of `text` that starts with "- " is
    a list item, its wrapped lines indented under it."""
    pad = f"{' ' * indent}# "
    out: list[str] = []
    for line in text.split("\n") if text else []:
        hang = "  " if line.startswith("- ") else ""
        parts = textwrap.wrap(line, WIDTH - len(pad), subsequent_indent=hang,
                              break_long_words=False, break_on_hyphens=False)
        out += [f"{pad}{part}" for part in parts] or [pad.rstrip()]
    return out


def _label(value: str) -> str:
    return value if PLAIN.fullmatch(value) else _quoted(value)


def _quoted(value: str) -> str:
    """A YAML double-quoted scalar: JSON's string escapes are YAML's."""
    return json.dumps(value, ensure_ascii=False)
