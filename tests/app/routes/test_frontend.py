"""The dashboard's files as the server hands them out: headers, caching, versioned plotly.js."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from peerwatch.app.routes import frontend
from tests.app.judged_client import JudgedClient


@pytest.fixture(scope="module")
def client() -> TestClient:
    app = FastAPI()
    app.include_router(frontend.router)
    return JudgedClient(app)

def test_index_links_the_installed_plotly_and_has_no_inline_script(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    html = response.text
    assert f'content="/static/vendor/plotly-cartesian-{frontend.PLOTLY_VERSION}.min.js"' in html
    assert frontend.PLOTLY_PLACEHOLDER not in html
    assert "<script>" not in html  # every script has a src: the CSP allows no inline code
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-eval" not in csp and "unsafe-inline'" in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["cache-control"] == "no-cache"

def test_index_preloads_every_module_of_the_dashboard(client: TestClient) -> None:
    """The whole module graph is fetched at once, not one import level per round trip."""
    import re
    html = client.get("/").text
    assert frontend.PRELOADS_PLACEHOLDER not in html
    build = frontend.build_id()
    preloaded = set(re.findall(rf'<link rel="modulepreload" href="/static/b-{build}/([\w./]+)">',
                               html))
    found = (p.relative_to(frontend.FRONTEND_DIR) for p in frontend.FRONTEND_DIR.rglob("*.js"))
    modules = {p.as_posix() for p in found if p.parts[0] != "vendor"} - frontend.CLASSIC_SCRIPTS
    assert preloaded == modules and "views/host.js" in modules and "charts/marks.js" in modules
    assert "app.js" in modules and not any(m.startswith("vendor/") for m in modules)
    for name in preloaded:
        assert client.get(f"/static/{name}").status_code == 200
        assert client.get(f"/static/b-{build}/{name}").status_code == 200


def test_our_files_are_linked_from_an_immutable_build_folder(client: TestClient) -> None:
    """A new tab loads the modules from the browser's cache: no round trip per module."""
    html = client.get("/").text
    prefix = f"/static/b-{frontend.build_id()}"
    for name in ("app.js", "boot.js", "style.css"):
        assert f'"{prefix}/{name}"' in html
        answer = client.get(f"{prefix}/{name}")
        assert answer.status_code == 200 and "immutable" in answer.headers["cache-control"]
        assert answer.content == (frontend.FRONTEND_DIR / name).read_bytes()
    assert frontend.STATIC_PLACEHOLDER not in html
    # another build's name (a page from before an upgrade): today's file, never cached as its
    old = client.get("/static/b-0123456789abcdef/app.js")
    assert old.status_code == 200 and old.headers["cache-control"] == "no-cache"
    assert client.get(f"{prefix}/../../app/main.py").status_code == 404
    assert client.get(f"{prefix}/nope.js").status_code == 404

def test_static_module_is_revalidated_with_an_etag(client: TestClient) -> None:
    first = client.get("/static/app.js")
    assert first.status_code == 200
    assert first.headers["content-type"].startswith("text/javascript")
    again = client.get("/static/app.js", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert again.content == b""

def test_module_in_a_folder_is_served_like_any_other(client: TestClient) -> None:
    """views/, charts/ ... are plain folders under /static/: same type, caching and CSP."""
    top, nested = client.get("/static/app.js"), client.get("/static/views/host.js")
    assert nested.status_code == 200
    assert nested.headers["content-type"] == top.headers["content-type"]
    for header in ("cache-control", "content-security-policy", "x-content-type-options"):
        assert nested.headers[header] == top.headers[header]
    again = client.get("/static/views/host.js", headers={"If-None-Match": nested.headers["etag"]})
    assert again.status_code == 304
    assert client.get("/static/views/../../app/main.py").status_code == 404

def test_plotly_is_served_versioned_gzipped_and_cached_for_a_year(client: TestClient) -> None:
    url = frontend.PLOTLY_URL
    response = client.get(url, headers={"Accept-Encoding": "gzip"})
    assert response.status_code == 200
    assert "immutable" in response.headers["cache-control"]
    assert response.headers["content-encoding"] == "gzip"
    assert f"plotly.js (cartesian - minified) v{frontend.PLOTLY_VERSION}" in response.text[:200]
    plain = client.get(url, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert plain.content.startswith(b"/**")

def test_other_plotly_versions_and_escapes_are_404(client: TestClient) -> None:
    assert client.get("/static/vendor/plotly-0.0.1.min.js").status_code == 404
    assert client.get("/static/vendor/plotly-cartesian-0.0.1.min.js").status_code == 404
    assert client.get("/static/../app/main.py").status_code == 404
    assert client.get("/static/%2e%2e/pyproject.toml").status_code == 404
    assert client.get("/static/nope.js").status_code == 404
