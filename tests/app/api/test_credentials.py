"""A probe speaks only for its own host; each credential does its one thing (both backends).

The red-team cases: a probe credential posting as another host (reports, snapshots), a
credential forged or of the wrong role, a drain controller resetting its own breaker, admin
bodies read before the credential, rotation with two keys live at once.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from peerwatch.app.api.keys import keyring_for
from peerwatch.app.runtime.config import Settings
from peerwatch.app.runtime.credentials import Role, issue, verify
from peerwatch.app.runtime.keyring import retire, rotate
from peerwatch.probes.agent.sender import HOST_HEADER
from tests.app.conftest import credential
from tests.app.factory import inventory, sweep
from tests.app.routes.test_snapshots import job_pair

REPORTS = "/api/v1/reports"


def post(client: TestClient, report, headers: dict[str, str]):
    return client.post(REPORTS, content=report.model_dump_json(), headers=headers)


def hosts(client: TestClient) -> list[str]:
    return [h["host"] for h in client.get("/api/v1/hosts").json()["hosts"]]


def test_a_probe_reports_for_its_own_host_only(client: TestClient) -> None:
    own = credential(client, "probe", "gpu-a")
    assert post(client, sweep("GPU-A"), own).status_code == 201
    forged = post(client, sweep("gpu-b"), own)
    assert forged.status_code == 403
    assert forged.json()["detail"] == "probe:gpu-a may not report for host 'gpu-b'"
    assert hosts(client) == ["gpu-a"]  # nothing of the forged report was stored


def test_a_forged_inventory_cannot_take_a_healthy_host_down(client: TestClient) -> None:
    """The drill: a 1-GPU inventory posted about a healthy 2-GPU host by another host's probe
    would have fired GPUMissing and drained it; refused, the host stays healthy."""
    victim = credential(client, "probe", "victim")
    assert post(client, sweep("victim", n=2), victim).status_code == 201
    one_gpu = sweep("victim", n=2).model_copy(update={"inventory": inventory(1), "results": []})
    attacker = credential(client, "probe", "attacker")
    assert post(client, one_gpu, attacker).status_code == 403
    health = client.get("/api/v1/hosts/victim/health").json()
    assert health["verdict"] == "healthy" and len(health["gpus"]) == 2


def test_the_host_header_is_checked_before_the_body_is_read(client: TestClient) -> None:
    own = credential(client, "probe", "gpu-a")
    r = client.post(REPORTS, content=b"not json at all", headers={**own, HOST_HEADER: "gpu-b"})
    assert r.status_code == 403 and "may not speak for host 'gpu-b'" in r.text


def test_a_relay_speaks_for_the_hosts_it_lists(client: TestClient) -> None:
    relay = credential(client, "probe", "gpu-a+gpu-b")
    assert post(client, sweep("gpu-a"), relay).status_code == 201
    assert post(client, sweep("gpu-b"), relay).status_code == 201
    assert post(client, sweep("gpu-c"), relay).status_code == 403


@pytest.mark.parametrize("role", ["gate", "drain", "admin"])
def test_only_a_probe_credential_posts_reports(client: TestClient, role: str) -> None:
    subject = "gpu-a" if role == "gate" else "someone"
    r = post(client, sweep("gpu-a"), credential(client, role, subject))
    assert r.status_code == 403 and "not a valid probe credential" in r.text


def test_forged_and_malformed_credentials_are_refused(client: TestClient) -> None:
    real = credential(client, "probe", "gpu-a")["Authorization"].removeprefix("Bearer ")
    forged = [real[:-4] + "AAAA",                          # a mac that is not the server's
              real.replace("probe~gpu-a", "probe~gpu-b"),  # the subject changed
              real.replace("probe~", "admin~"),            # the role changed
              "pw1~probe~gpu-a", "pw1~probe~a/b~x", "pw9" + real[3:], "~~~"]
    for token in forged:
        r = post(client, sweep("gpu-a"), {"Authorization": f"Bearer {token}"})
        assert r.status_code == 403, token
    assert hosts(client) == []


def test_a_snapshot_is_accepted_only_from_its_own_host(client: TestClient) -> None:
    body = job_pair("gpu-a")[0].model_dump_json()
    json_type = {"Content-Type": "application/json"}
    r = client.post("/api/v1/snapshots", content=body,
                    headers={**credential(client, "probe", "gpu-b"), **json_type})
    assert r.status_code == 403 and "probe:gpu-b may not report for host 'gpu-a'" in r.text
    r = client.post("/api/v1/snapshots", content=body,
                    headers={**credential(client, "probe", "gpu-a"), **json_type})
    assert r.status_code == 201, r.text  # its own host


ADMIN_POSTS = [("/api/v1/silences", {"matchers": {"host": "x"}, "duration_s": 60,
                                     "created_by": "x"}),
               ("/api/v1/maintenance", {"host": "x", "duration_s": 60}),
               ("/api/v1/alerts/1/ack", {"by": "x"}),
               ("/api/v1/actions", {"host": "x", "kind": "take_out", "mode": "act",
                                    "reason": "x", "actor": "x"}),
               ("/api/v1/drain/breaker/reset", {"by": "x"})]


@pytest.mark.parametrize(("path", "body"), ADMIN_POSTS)
def test_admin_routes_check_the_credential_before_the_body(client: TestClient, path: str,
                                                           body: dict) -> None:
    """A body that would take the parser time (or fail it) is never read without one."""
    huge = b'{"duration_s": ' + b"9" * 5000 + b"}"
    assert client.post(path, content=huge).status_code == 401
    probe = credential(client, "probe", "x")
    r = client.post(path, content=huge, headers=probe)
    assert r.status_code == 403 and "Traceback" not in r.text


def test_acts_are_recorded_under_the_credential_not_the_body(client: TestClient) -> None:
    alice = credential(client, "admin", "alice")
    r = client.post("/api/v1/silences", headers=alice,
                    json={"matchers": [{"name": "host", "value": "gpu-a"}], "duration_s": 60,
                          "created_by": "bob"})
    assert r.status_code == 201 and r.json()["created_by"] == "admin:alice"
    r = client.post("/api/v1/maintenance", headers=alice,
                    json={"host": "gpu-a", "duration_s": 60, "created_by": "bob"})
    assert r.status_code == 201 and r.json()["created_by"] == "admin:alice"


def test_rotation_keeps_two_keys_live_then_retires_the_old(client: TestClient,
                                                          settings: Settings) -> None:
    keyring = keyring_for(client.app)
    old = issue(keyring.keys(), Role.PROBE, "gpu-a")
    rotate(keyring.path)
    new = issue(keyring.keys(), Role.PROBE, "gpu-a")
    assert new != old
    for token in (old, new):
        r = post(client, sweep("gpu-a"), {"Authorization": f"Bearer {token}"})
        assert r.status_code in (200, 201), r.text
    retire(keyring.path)
    assert verify(keyring.keys(), old) is None
    r = post(client, sweep("gpu-a"), {"Authorization": f"Bearer {old}"})
    assert r.status_code == 403
    assert post(client, sweep("gpu-a"), {"Authorization": f"Bearer {new}"}).status_code == 201


@pytest.mark.parametrize("name", ["PEERWATCH_PROBE_TOKENS", "PEERWATCH_ADMIN_TOKEN"])
def test_a_shipped_example_token_stops_the_server(monkeypatch: pytest.MonkeyPatch,
                                                  name: str) -> None:
    monkeypatch.setenv(name, "change-me-probe")
    with pytest.raises(ValueError, match=f"{name} holds an example value"):
        Settings()
