"""GET /api/v1/admin/check: the dashboard checks a typed admin token on entry; a wrong one is
refused with the same 401/403 every admin route gives, a right one names its credential."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.app.conftest import ADMIN_TOKEN


def test_the_admin_token_is_checked_and_nothing_changes(client: TestClient) -> None:
    assert client.get("/api/v1/admin/check").status_code == 401
    wrong = client.get("/api/v1/admin/check", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 403 and "admin credential" in wrong.json()["detail"]
    right = client.get("/api/v1/admin/check", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert right.status_code == 200, right.text
    assert right.json()["name"].startswith("admin:")
    assert client.get("/api/v1/silences").json()["silences"] == []
