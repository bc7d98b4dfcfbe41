"""Alertmanager-style label matchers, as silences hold them: values in, values out.

A matcher is `{"name", "value", "is_regex", "is_equal"}` exactly as Alertmanager's API
writes it; regexes are anchored like Prometheus's. Matching a silence means matching every
one of its matchers. Here, below the API shapes that refuse a bad regex and the alerting
that mutes by them, so both compile a pattern one way.

Regexes are RE2 (`google-re2`), the engine Alertmanager and Prometheus use: matching costs
time linear in the label's length whatever the pattern, so a pattern like `(a+)+$` cannot
pin a CPU (Python's backtracking `re` takes exponential time on it). RE2 has no
backreferences or lookaround; a pattern using them is refused when the silence is created.
A regex on `host` ignores case, as host names do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import re2

# RE2 refuses a pattern whose compiled program would need more than this (e.g. nested
# counted repetitions), so compiling is bounded too.
REGEX_MAX_MEM = 8 << 20


def _options(*, ignore_case: bool) -> Any:
    options = re2.Options()
    options.max_mem = REGEX_MAX_MEM
    options.log_errors = False
    options.case_sensitive = not ignore_case
    return options


@lru_cache(maxsize=1024)
def compiled(pattern: str, ignore_case: bool = False) -> Any:
    """The RE2 program of `pattern` (ValueError naming what RE2 could not take)."""
    try:
        return re2.compile(pattern, _options(ignore_case=ignore_case))
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise ValueError(f"value {pattern[:200]!r} is not a valid regex (RE2 syntax): {reason}") \
            from None


def matcher_matches(matcher: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    value = labels.get(str(matcher["name"]), "")
    if matcher.get("is_regex"):
        program = compiled(str(matcher["value"]), ignore_case=matcher["name"] == "host")
        hit = program.fullmatch(value) is not None
    else:
        hit = value == matcher["value"]
    return hit if matcher.get("is_equal", True) else not hit


def silence_matches(matchers: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    return bool(matchers) and all(matcher_matches(m, labels) for m in matchers)
