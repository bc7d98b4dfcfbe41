"""OpenAPI document: FastAPI's own, plus the schemas of bodies that routes read by hand.

`POST /api/v1/reports` reads its body itself (to check size and schema_version first), so
FastAPI cannot see the `Report` model; this adds it (and the models it uses) to
`components/schemas`, where the route's `requestBody` points.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from probes.report import Report

EXTRA_SCHEMAS: tuple[type[BaseModel], ...] = (Report,)


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        doc = get_openapi(title=app.title, version=app.version, description=app.description,
                          routes=app.routes)
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        for model in EXTRA_SCHEMAS:
            schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            for name, sub in schema.pop("$defs", {}).items():
                schemas.setdefault(name, sub)
            schemas[model.__name__] = schema
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
