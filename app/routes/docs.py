"""`/docs`: Swagger UI served from the files the `fastapi-offline` package ships (Swagger UI
5, which reads OpenAPI 3.1 as FastAPI writes it; the `swagger-ui-bundle` package's 4.15 could
not and showed "Unable to render this definition"), never a CDN, so the API documentation
works on an air-gapped cluster like the dashboard does.

The page runs under the same Content-Security-Policy as every HTML answer
(`app.api.response_headers.HTML_CSP`: scripts from this origin only), so it carries no inline
script: FastAPI's stock page starts Swagger UI from an inline `<script>`, which that policy
blocks. The start-up script is served as an asset of its own instead, and turns off the
online validator badge (an image from another origin).
"""

from __future__ import annotations

from html import escape
from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)

ASSETS = "/docs/assets"
STATIC = Path(fastapi_offline.__file__).parent / "static"
SERVED = {"swagger-ui-bundle.js": "text/javascript; charset=utf-8",
          "swagger-ui.css": "text/css; charset=utf-8",
          "favicon.png": "image/png"}
INIT = "swagger-init.js"
CACHE = {"Cache-Control": "public, max-age=86400"}

PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link type="text/css" rel="stylesheet" href="{assets}/swagger-ui.css">
<link rel="icon" href="{assets}/favicon.png">
<title>{title}</title>
</head>
<body>
<div id="swagger-ui" data-openapi-url="{openapi_url}"></div>
<script src="{assets}/swagger-ui-bundle.js"></script>
<script src="{assets}/{init}"></script>
</body>
</html>
"""

INIT_JS = """// Starts Swagger UI on /docs (a file: the page's CSP allows no inline script).
const root = document.getElementById("swagger-ui");
window.ui = SwaggerUIBundle({
  url: root.dataset.openapiUrl,
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
"""


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    return HTMLResponse(PAGE.format(
        assets=ASSETS, init=INIT, title=escape(f"{request.app.title} - API"),
        openapi_url=escape(request.app.openapi_url or "")))


@router.get(ASSETS + "/{name}")
def swagger_asset(name: str) -> Response:
    if name == INIT:
        return Response(INIT_JS, media_type="text/javascript; charset=utf-8", headers=CACHE)
    if name not in SERVED:
        raise HTTPException(404, f"no docs asset {name!r}")
    body = (STATIC / name).read_bytes()
    return Response(body, media_type=SERVED[name], headers=CACHE)
