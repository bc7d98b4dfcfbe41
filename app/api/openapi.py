"""OpenAPI document: FastAPI's own, plus the schemas of bodies that routes read by hand,
plus every answer a route can give, so the document is a contract (schemathesis checks the
answers against it, tests/app/test_fuzz_api.py).

`POST /api/v1/reports` reads its body itself (to check size and schema_version first), so
FastAPI cannot see the `Report` model; this adds it (and the models it uses) to
`components/schemas`, where the route's `requestBody` points.

The answers FastAPI cannot see are added to each operation that can give them, each with
its body's schema (`{"detail": "..."}` unless the route documents its own):
401/403 where a bearer token is required, 404 where a path names a host, alert, silence,
window or snapshot, 422 (FastAPI's list shape, also for bad JSON) where there are
parameters or a body, 413 where there is a body, 503 (`Retry-After`) on every `/api/v1`
operation, since any of them may meet a database that is briefly unreachable.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from peerwatch.probes.report import Report

EXTRA_SCHEMAS: tuple[type[BaseModel], ...] = (Report,)


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        doc = get_openapi(title=app.title, version=app.version, description=app.description,
                          routes=getattr(app.state, "documented_routes", app.routes))
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        for model in EXTRA_SCHEMAS:
            schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            for name, sub in schema.pop("$defs", {}).items():
                schemas.setdefault(name, sub)
            schemas[model.__name__] = schema
        document_answers(doc)
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]


ERROR_DETAIL = {"type": "object", "required": ["detail"],
                "properties": {"detail": {"type": "string"}}, "title": "ErrorDetail"}
VALIDATION = {"$ref": "#/components/schemas/HTTPValidationError"}
WHY = {401: "No bearer token.", 403: "The bearer token is not the one this operation needs.",
       404: "Not found (the detail names what).",
       413: "Body larger than this operation takes (the detail names the limit).",
       422: "Invalid parameters or body (each error names its field; invalid JSON, NaN, "
            "NUL, lone surrogates and bad UTF-8 are type `json_invalid`).",
       503: "The database is unavailable for a moment; retry after `Retry-After` seconds."}


def _statuses(path: str, operation: dict[str, Any]) -> list[int]:
    found = []
    if operation.get("security"):
        found += [401, 403]
    if "{" in path:
        found.append(404)
    if operation.get("parameters") or operation.get("requestBody"):
        found.append(422)
    if operation.get("requestBody"):
        found.append(413)
    if path.startswith("/api/v1"):
        found.append(503)
    return found


def document_answers(doc: dict[str, Any]) -> None:
    """Add to every operation the answers it can give and does not yet document, and give
    every documented error a body schema."""
    doc["components"]["schemas"].setdefault("ErrorDetail", ERROR_DETAIL)
    doc["components"]["schemas"].setdefault("HTTPValidationError", _validation_schema())
    doc["components"]["schemas"].setdefault("ValidationError", _validation_item())
    for path, item in doc["paths"].items():
        for operation in item.values():
            responses = operation.setdefault("responses", {})
            for code in _statuses(path, operation):
                responses.setdefault(str(code), {"description": WHY[code]})
            for code, answer in responses.items():
                if code.startswith(("4", "5")) and "content" not in answer:
                    schema = VALIDATION if code == "422" else {
                        "$ref": "#/components/schemas/ErrorDetail"}
                    answer["content"] = {"application/json": {"schema": schema}}


def _validation_item() -> dict[str, Any]:
    return {"title": "ValidationError", "type": "object", "required": ["loc", "msg", "type"],
            "properties": {"loc": {"type": "array", "items": {
                "anyOf": [{"type": "string"}, {"type": "integer"}]}},
                "msg": {"type": "string"}, "type": {"type": "string"}}}


def _validation_schema() -> dict[str, Any]:
    return {"title": "HTTPValidationError", "type": "object", "properties": {"detail": {
        "type": "array", "items": {"$ref": "#/components/schemas/ValidationError"}}}}
