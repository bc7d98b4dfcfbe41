"""Reading a posted wire document (a probe report, a job snapshot) into its model.

Both ingest routes read the body by hand, in the order that gives the most useful error:
size (413, while reading), JSON (422,
                                 `app.api.json_body`: the reader every JSON route shares),
`schema_version` (400 naming the supported versions,
before full validation, so a newer probe is told to upgrade the server rather than shown
fifty field errors), integers past 64 bits (422 naming the field), then the wire model
in strict mode (422 naming each field). One module, so the two documents are refused the same way.

A body is parsed once: pydantic validates it straight from the bytes (`model_validate_json`),
and only a body that fails there, or that a byte search says might hold what pydantic's
parser reads but `load_json` refuses (an integer past 64 bits, `NaN`, `Infinity`, `\\u0000`),
takes the careful path above, which names the problem as it always did. pydantic's parser
refuses what orjson refuses (invalid UTF-8, lone surrogates, trailing text) and reads
duplicate keys as orjson does (the last wins), and every float of the wire models refuses a
non-finite value (`1e400` too), so a body it accepts is one the careful path accepts, into
the same model. The extra orjson parse is small beside the validation it comes before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from fastapi import HTTPException, status
from pydantic import BaseModel, ValidationError

from peerwatch.app.api.errors import body_errors
from peerwatch.app.api.json_body import NUL_ESCAPE, load_json, too_deep
from peerwatch.app.api.report_checks import oversized_integers, oversized_lists, too_many_items

M = TypeVar("M", bound=BaseModel)

# An integer beyond 64 bits has 19+ digits in a row; the digits after a float's point do not
# count (a sweep has dozens of those). Finding such a run in the bytes (every digit mapped to
# "0", then a plain `find`) is much faster than a regex; walking the parsed tree to name the
# field is done only when one is found.
_DIGITS_TO_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_LONG_RUN = b"0" * 19
_ZERO = ord("0")
# what pydantic's JSON parser reads but `load_json` refuses or checks itself: such a body
# takes the careful path, whatever else it holds
_CAREFUL_MARKS = (b"NaN", b"Infinity", NUL_ESCAPE)


def may_hold_long_integer(body: bytes) -> bool:
    """False only when no integer of 19+ digits can be in `body`."""
    flat = body.translate(_DIGITS_TO_ZERO)
    at = flat.find(_LONG_RUN)
    while at != -1:
        if at == 0 or body[at - 1] != ord("."):
            return True
        end = at + len(_LONG_RUN)
        while end < len(flat) and flat[end] == _ZERO:
            end += 1
        at = flat.find(_LONG_RUN, end)
    return False


def validate_wire(model: type[M], body: bytes, what: str) -> M:
    """The wire model (422 naming each field), validated from the bytes in pydantic's strict
    JSON mode: a number sent as a string (`"value": "1e9"`) is refused, not converted."""
    try:
        return model.model_validate_json(body, strict=True)
    except RecursionError as exc:
        raise too_deep(what) from exc
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if any(e["type"] == "json_invalid" and "recursion limit" in e["msg"] for e in errors):
            raise too_deep(what) from exc  # pydantic's parser stops a few hundred levels in
        raise body_errors([dict(e) for e in errors]) from exc
    except TypeError as exc:  # e.g. comparing a naive with an aware timestamp
        raise body_errors([{"type": "value_error", "loc": (), "msg": str(exc)}]) from exc


def parse_wire(body: bytes, model: type[M], versions: Sequence[int], what: str,
               version_field: str = "schema_version") -> M:
    """The body validated in one pass when it is well formed; else the careful path (each
    refusal as `parse_carefully` gives it). `version_field` is how a 400 names the version
    ("snapshot schema_version")."""
    parsed = _validated_at_once(body, model, versions)
    if parsed is not None:
        return parsed
    return parse_carefully(body, model, versions, what, version_field)


def _validated_at_once(body: bytes, model: type[M], versions: Sequence[int]) -> M | None:
    """`body` as `model`, validated from the bytes in strict mode; None when it is not
    plainly acceptable (the careful path then says why, or accepts it)."""
    if any(mark in body for mark in _CAREFUL_MARKS) or may_hold_long_integer(body):
        return None
    try:
        parsed = model.model_validate_json(body, strict=True)
    except (ValidationError, RecursionError, TypeError):
        return None
    if getattr(parsed, "schema_version", versions[-1]) not in versions:
        return None
    inventory = getattr(parsed, "inventory", None)
    results = getattr(parsed, "results", None)
    if inventory is not None and too_many_items(
            len(inventory.gpus), len(results) if isinstance(results, list) else None):
        return None
    return parsed


def parse_carefully(body: bytes, model: type[M], versions: Sequence[int], what: str,
                    version_field: str = "schema_version") -> M:
    """JSON -> schema_version check (400) -> 64-bit check -> wire model (422s)."""
    data = load_json(body, what)
    if not isinstance(data, dict):
        raise body_errors([{"type": "model_type", "loc": (),
                            "msg": f"a {what} must be a JSON object"}])
    version = data.get("schema_version", versions[-1])
    if version not in versions:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            detail=f"unsupported {version_field} {version!r}; this server supports "
                   f"{list(versions)}",
        )
    if too_long := oversized_lists(data):  # before validating thousands of items
        raise body_errors(too_long)
    if may_hold_long_integer(body) and (too_large := oversized_integers(data)):
        raise body_errors(too_large)
    return validate_wire(model, body, what)
