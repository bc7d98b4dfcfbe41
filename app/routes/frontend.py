"""The dashboard: `/` serves `frontend/index.html`, `/static/...` its modules and plotly.js.

There is no build step: the browser loads the plain ES modules in `frontend/` as they are, and
plotly.js is the partial "cartesian" bundle (heatmap and scatter are all the charts draw: 1.5 MB,
not the full bundle's 4.8 MB) vendored in `frontend/vendor/` with its version in its name (nothing
from a CDN, so the dashboard works on an air-gapped cluster). It is served at a URL carrying that
version (`/static/vendor/plotly-cartesian-<version>.min.js`) so it can be cached for a year;
our own modules, the style sheet and boot.js are served twice: at `/static/<path>`, revalidated
on every load (ETag), and at `/static/b-<build>/<path>`, where `<build>` is a hash of every file
of frontend/ (`build_id`), cached for a year. The page links the second: a new tab loads its
40-odd modules from the browser's cache without one round trip to the server (issue 40: they
took the first 320 ms of a cold host page), and an upgrade changes `<build>`, so a browser
never mixes old and new modules (relative imports stay inside one build's folder).

Every page gets a Content-Security-Policy that allows scripts from this origin only: the
pages have no inline script, and every string from a report reaches the DOM as text. Styles
allow 'unsafe-inline' because plotly.js writes style attributes and a <style> element of its
own; plotly's SVG charts (heatmap, scatter) need no 'unsafe-eval'.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
from functools import lru_cache
from html import escape
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request, Response

from peerwatch.app.api.response_headers import HTML_CSP
from peerwatch.app.routes.catalog import catalog_json
from peerwatch.app.runtime.assets import asset_dir

router = APIRouter(include_in_schema=False)

FRONTEND_DIR = asset_dir("frontend")


def _vendored_plotly() -> Path:
    """The one vendored bundle, frontend/vendor/plotly-cartesian-<version>.min.js."""
    found = sorted((FRONTEND_DIR / "vendor").glob("plotly-cartesian-*.min.js"))
    if len(found) != 1:
        raise FileNotFoundError(f"expected one plotly-cartesian-<version>.min.js in "
                                f"{FRONTEND_DIR / 'vendor'}, found {[f.name for f in found]}")
    return found[0]


PLOTLY_FILE = _vendored_plotly()
PLOTLY_VERSION: str = PLOTLY_FILE.name.removeprefix("plotly-cartesian-").removesuffix(".min.js")
PLOTLY_URL = f"/static/vendor/{PLOTLY_FILE.name}"
PLOTLY_PLACEHOLDER = "__PLOTLY_URL__"
TESTS_PLACEHOLDER = "__PEERWATCH_TESTS__"

PRELOADS_PLACEHOLDER = "<!-- __MODULE_PRELOADS__ -->"
STATIC_PLACEHOLDER = "__STATIC__"  # index.html's prefix of our files: /static/b-<build>
CLASSIC_SCRIPTS = {"boot.js"}  # not modules: loaded by a plain <script>


def our_modules() -> list[str]:
    """Our ES modules, as paths under frontend/ ("app.js", "views/host.js"): every folder but
    vendor/, whose plotly.js is a classic script of its own."""
    found = (p.relative_to(FRONTEND_DIR) for p in FRONTEND_DIR.rglob("*.js"))
    return sorted(p.as_posix() for p in found
                  if p.parts[0] != "vendor" and p.as_posix() not in CLASSIC_SCRIPTS)


def _our_files() -> tuple[tuple[str, int, int], ...]:
    """(path, mtime, size) of every file of frontend/ but vendor/ (plotly.js has its version
    in its name): cheap to read (stats only), and it moves whenever a file is replaced."""
    found = []
    for path in FRONTEND_DIR.rglob("*"):
        rel = path.relative_to(FRONTEND_DIR)
        if rel.parts[0] != "vendor" and path.is_file():
            stat = path.stat()
            found.append((rel.as_posix(), stat.st_mtime_ns, stat.st_size))
    return tuple(sorted(found))


@lru_cache(maxsize=4)
def _hash_of(files: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for rel, _, _ in files:
        digest.update(rel.encode() + b"\0" + (FRONTEND_DIR / rel).read_bytes())
    return digest.hexdigest()[:16]


def build_id() -> str:
    """A hash of our files' contents: what names the immutable folder the page loads them
    from. Looked at again for each request (stats; the contents are hashed only when one
    moved), so a server whose files were replaced names the new build at once."""
    return _hash_of(_our_files())


def static_prefix(build: str) -> str:
    return f"/static/b-{build}"


def module_preloads(prefix: str = "/static") -> str:
    """A `<link rel="modulepreload">` per module of frontend/: the browser fetches (and
    compiles) the whole module graph at once instead of one import level per round trip, so
    a new tab's first API calls leave ~3 round trips sooner (bench/dashboard.py)."""
    return "\n  ".join(f'<link rel="modulepreload" href="{prefix}/{n}">' for n in our_modules())


CSP = HTML_CSP  # one policy for every HTML answer (app/api/response_headers.py)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
REVALIDATE = "no-cache"  # may be stored, must be revalidated (cheap: 304 on a matching ETag)
IMMUTABLE = "public, max-age=31536000, immutable"
TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
         ".html": "text/html; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}


def _etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:20] + '"'


def _revalidated(request: Request, body: bytes, media_type: str) -> Response:
    """The body with an ETag, or 304 when the browser already holds this exact version."""
    tag = _etag(body)
    headers = {**SECURITY_HEADERS, "Cache-Control": REVALIDATE, "ETag": tag}
    if tag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=media_type, headers=headers)


@router.get("/")
def index(request: Request) -> Response:
    """The single page; the hash (#/fleet, #/host/<name> ...) picks the view in the browser."""
    html = (FRONTEND_DIR / "index.html").read_text(encoding="utf-8")
    prefix = static_prefix(build_id())
    body = (html.replace(PLOTLY_PLACEHOLDER, PLOTLY_URL)
            .replace(TESTS_PLACEHOLDER, escape(catalog_json(), quote=True))
            .replace(PRELOADS_PLACEHOLDER, module_preloads(prefix))
            .replace(STATIC_PLACEHOLDER, prefix).encode())
    return _revalidated(request, body, TYPES[".html"])


@lru_cache(maxsize=1)
def _plotly_bytes() -> tuple[bytes, bytes]:
    """The vendored plotly.js bundle, plain and gzipped (compressed once)."""
    raw = PLOTLY_FILE.read_bytes()
    return raw, gzip.compress(raw, compresslevel=6, mtime=0)


@router.get("/static/vendor/plotly-cartesian-{version}.min.js")
def plotly_js(version: str, request: Request) -> Response:
    if version != PLOTLY_VERSION:
        raise HTTPException(404, f"plotly.js {version} is not vendored; {PLOTLY_URL} is")
    raw, packed = _plotly_bytes()
    headers = {**SECURITY_HEADERS, "Cache-Control": IMMUTABLE, "Vary": "Accept-Encoding"}
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["Content-Encoding"] = "gzip"
        return Response(packed, media_type=TYPES[".js"], headers=headers)
    return Response(raw, media_type=TYPES[".js"], headers=headers)


def _static_file(path: str) -> Path:
    """A file inside frontend/, or 404: no path may climb out of it."""
    try:
        target = (FRONTEND_DIR / path).resolve()
        found = target.is_relative_to(FRONTEND_DIR) and target.is_file()
    except (ValueError, OSError):  # a NUL byte, a name too long for the file system
        found = False
    if not found:
        raise HTTPException(404, f"no static file {path!r}")
    return target


@router.get("/static/b-{build}/{path:path}")
def static_of_build(build: str, path: str, request: Request) -> Response:
    """A file of the build `build`: cached for a year when it is this server's build; a
    file asked under another build's name (a page opened before an upgrade) is served as it
    is now, revalidated, never cached as that build's."""
    target = _static_file(path)
    media_type = TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0]
    if build != build_id():
        return _revalidated(request, target.read_bytes(), media_type or "application/octet-stream")
    return Response(target.read_bytes(), media_type=media_type or "application/octet-stream",
                    headers={**SECURITY_HEADERS, "Cache-Control": IMMUTABLE})


@router.get("/static/{path:path}")
def static(path: str, request: Request) -> Response:
    target = _static_file(path)
    media_type = TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0]
    return _revalidated(request, target.read_bytes(), media_type or "application/octet-stream")
