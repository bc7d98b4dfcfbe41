"""The server compresses what it sends when the browser accepts gzip (a faster first
draw): JSON answers and the dashboard's modules, and never plotly.js a second time."""

from __future__ import annotations

import gzip
from pathlib import Path

from fastapi.testclient import TestClient

from peerwatch.app.main import create_app
from peerwatch.app.routes import frontend
from peerwatch.app.runtime.config import Settings
from tests.app.judged_client import JudgedClient


def client(tmp_path: Path) -> TestClient:
    return JudgedClient(create_app(Settings(data_dir=tmp_path)))  # no lifespan: no DB needed


def test_json_and_modules_are_gzipped_when_accepted(tmp_path: Path) -> None:
    c = client(tmp_path)
    for url in ("/openapi.json", "/static/views/host.js", "/static/style.css"):
        packed = c.get(url, headers={"Accept-Encoding": "gzip"})
        assert packed.status_code == 200, url
        assert packed.headers["content-encoding"] == "gzip", url
        assert "accept-encoding" in packed.headers["vary"].lower(), url
        plain = c.get(url, headers={"Accept-Encoding": "identity"})
        assert "content-encoding" not in plain.headers, url
        assert packed.content == plain.content, url  # the client un-gzipped it: same bytes


def test_plotly_is_gzipped_once(tmp_path: Path) -> None:
    c = client(tmp_path)
    response = c.get(frontend.PLOTLY_URL, headers={"Accept-Encoding": "gzip"})
    assert response.headers["content-encoding"] == "gzip"
    assert response.content.startswith(b"/**")  # one layer of gzip, undone by the client
    raw, packed = frontend._plotly_bytes()
    assert int(response.headers["content-length"]) == len(packed)  # sent as compressed once
    assert gzip.decompress(packed) == raw == response.content
