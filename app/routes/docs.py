"""`/docs`: Swagger UI served from the `swagger-ui-bundle` Python package, never a CDN, so the
API documentation works on an air-gapped cluster like the dashboard does."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from swagger_ui_bundle import swagger_ui_path

router = APIRouter(include_in_schema=False)

ASSETS = "/docs/assets"
SERVED = {"swagger-ui-bundle.js": "text/javascript; charset=utf-8",
          "swagger-ui.css": "text/css; charset=utf-8",
          "favicon-32x32.png": "image/png"}


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url=request.app.openapi_url, title=f"{request.app.title} - API",
        swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS}/favicon-32x32.png")


@router.get(ASSETS + "/{name}")
def swagger_asset(name: str) -> Response:
    if name not in SERVED:
        raise HTTPException(404, f"no docs asset {name!r}")
    body = (swagger_ui_path / name).read_bytes()
    return Response(body, media_type=SERVED[name],
                    headers={"Cache-Control": "public, max-age=86400"})
