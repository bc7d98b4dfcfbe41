"""A body validated once, straight from its bytes, is read exactly as the careful path
(orjson, the schema_version check, the length and 64-bit checks, then validation) reads it:
the same model for a good body, the same refusal (status and detail) for a bad one. The
hostile bodies are those where pydantic's parser and orjson could part: non-finite numbers,
integers past 64 bits, NUL and lone surrogates, bad UTF-8, duplicate keys, numbers as
strings, too many results for the GPUs, an unknown schema_version."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError

from peerwatch.app.api.wire_body import _validated_at_once, parse_carefully, parse_wire
from peerwatch.probes.report import SUPPORTED_SCHEMA_VERSIONS, Report, ReportKind
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report


def _sweep() -> bytes:
    fabric = SimulatedFabric("h200x2", seed=3, hostname="once-h200x2")
    return build_report(fabric, options=SweepOptions(timeout_s=None)).model_dump_json().encode()


def _inventory() -> bytes:
    fabric = SimulatedFabric("hgx8", seed=3, hostname="once-hgx8")
    return build_report(fabric, kind=ReportKind.INVENTORY).model_dump_json().encode()


SWEEP = _sweep()
FIRST_VALUE = b'"value":'


def _at_first_value(text: bytes) -> Callable[[bytes], bytes]:
    """The body with its first result's value replaced by `text` (raw JSON)."""
    def edit(body: bytes) -> bytes:
        at = body.index(FIRST_VALUE) + len(FIRST_VALUE)
        end = body.index(b",", at)
        return body[:at] + text + body[end:]
    return edit


def _replace(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    return lambda body: body.replace(old, new, 1)


EDITS: dict[str, Callable[[bytes], bytes]] = {
    "as sent": lambda body: body,
    "overflowing float": _at_first_value(b"1e400"),
    "underflowing float": _at_first_value(b"1e-400"),
    "NaN": _at_first_value(b"NaN"),
    "-Infinity": _at_first_value(b"-Infinity"),
    "integer past 64 bits": _replace(b'"copies":', b'"copies":123456789012345678901234567890,'
                                                  b'"x":'),
    "number as a string": _at_first_value(b'"1e9"'),
    "NUL in a name": _replace(b'"hostname":"once-h200x2"', b'"hostname":"once\\u0000"'),
    "lone surrogate": _replace(b'"hostname":"once-h200x2"', b'"hostname":"o\\ud800"'),
    "bad UTF-8": _replace(b'"hostname":"once-h200x2"', b'"hostname":"o\xff"'),
    "duplicate key": _replace(b'"kind":"sweep"', b'"kind":"inventory","kind":"sweep"'),
    "unknown version": _replace(b'"schema_version":4', b'"schema_version":9'),
    "trailing text": lambda body: body + b" x",
    "not an object": lambda body: b"[" + body + b"]",
    "too many results": lambda body: body.replace(
        b'"results":[', b'"results":[' + _first_result(body) * 200, 1),
}


def _first_result(body: bytes) -> bytes:
    start = body.index(b'"results":[') + len(b'"results":[')
    return body[start:body.index(b"}", start) + 1] + b","


def _outcome(parse: Callable[[], Report]) -> tuple[str, Any]:
    try:
        return "model", parse()
    except RequestValidationError as exc:
        return "422", exc.errors()
    except HTTPException as exc:
        return str(exc.status_code), exc.detail


@pytest.mark.parametrize("edit", EDITS)
def test_one_pass_reads_a_body_as_the_careful_path_does(edit: str) -> None:
    body = EDITS[edit](SWEEP)
    once = _outcome(lambda: parse_wire(body, Report, SUPPORTED_SCHEMA_VERSIONS, "report"))
    careful = _outcome(lambda: parse_carefully(body, Report, SUPPORTED_SCHEMA_VERSIONS,
                                               "report"))
    assert once == careful
    assert (once[0] == "model") == (edit in ("as sent", "underflowing float", "duplicate key"))


def test_an_inventory_report_reads_the_same_either_way() -> None:
    body = _inventory()
    once = parse_wire(body, Report, SUPPORTED_SCHEMA_VERSIONS, "report")
    assert once == parse_carefully(body, Report, SUPPORTED_SCHEMA_VERSIONS, "report")


def test_a_probe_body_takes_the_one_pass() -> None:
    """What a probe sends is validated once (no orjson parse beside it): the point."""
    for body in (SWEEP, _inventory()):
        assert _validated_at_once(body, Report, SUPPORTED_SCHEMA_VERSIONS) is not None
