"""One host, one name: host names are compared in lowercase
(DNS is case-insensitive) at ingest, in every path and query, in maintenance windows,
silences and snapshots; every place a host is named follows one rule (422 naming it, or a
usage error on the command line); a valid name never stored is a 404."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from fastapi.testclient import TestClient

from peerwatch.probes.report import HOSTNAME_RULE
from tests.app.conftest import ADMIN_TOKEN, probe_headers
from tests.app.factory import sweep

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
READS = ["", "/topology", "/matrix", "/health", "/links/series", "/series?src=0&dst=1",
         "/snapshots"]


def _post(client: TestClient, host: str) -> Any:
    return client.post("/api/v1/reports", content=sweep(n=2, host=host).model_dump_json(),
                       headers={**probe_headers(), "Content-Type": "application/json"})


def test_two_casings_are_one_host(client: TestClient) -> None:
    assert _post(client, "rte-case-X").status_code == 201
    second = _post(client, "RTE-Case-x")
    assert second.status_code == 201 and second.json()["host"] == "rte-case-x"
    hosts = [h["host"] for h in client.get("/api/v1/hosts").json()["hosts"]]
    assert hosts == ["rte-case-x"]
    for spelling in ("rte-case-x", "RTE-CASE-X", "Rte-Case-X"):
        for read in READS:
            r = client.get(f"/api/v1/hosts/{spelling}{read}")
            assert r.status_code == 200, (spelling, read, r.text)
    r = client.get("/api/v1/scheduler/placement", params={"host": "RTE-CASE-X", "gpus": 1})
    assert r.status_code == 200 and r.json()["host"] == "rte-case-x", r.text


def test_unknown_host_is_a_404_naming_it(client: TestClient) -> None:
    for read in READS[:5]:
        r = client.get(f"/api/v1/hosts/never-seen{read}")
        assert r.status_code == 404 and "never-seen" in r.text, (read, r.text)


@pytest.mark.parametrize("bad", ["a..b", "-a", "a_b-", "x" * 254, "a%20b", "%3Cimg%3E"])
def test_a_name_breaking_the_rule_is_a_422_in_paths_and_queries(bad: str,
                                                                client: TestClient) -> None:
    for url in (f"/api/v1/hosts/{bad}", f"/api/v1/hosts/{bad}/health",
                f"/api/v1/alerts?host={bad}", f"/api/v1/maintenance?host={bad}",
                f"/api/v1/scheduler/placement?gpus=1&host={bad}"):
        r = client.get(url)
        assert r.status_code == 422, (url, r.text)


@pytest.mark.parametrize("bad", ["a/b", "<img src=x onerror=alert(1)>", "a..b", ""])
def test_maintenance_follows_the_host_rule(bad: str, client: TestClient) -> None:
    r = client.post("/api/v1/maintenance", headers=ADMIN,
                    json={"host": bad, "duration_s": 3600})
    assert r.status_code == 422, r.text
    assert client.get("/api/v1/maintenance").json()["windows"] == []


def test_maintenance_and_alert_filters_use_the_canonical_name(client: TestClient) -> None:
    r = client.post("/api/v1/maintenance", headers=ADMIN,
                    json={"host": "GPU-Node-17", "duration_s": 3600})
    assert r.status_code == 201 and r.json()["host"] == "gpu-node-17", r.text
    [window] = client.get("/api/v1/maintenance?host=GPU-NODE-17").json()["windows"]
    assert window["host"] == "gpu-node-17"


def test_silence_host_matchers_are_lowercase(client: TestClient) -> None:
    r = client.post("/api/v1/silences", headers=ADMIN, json={
        "matchers": [{"name": "host", "value": "GPU-Node-17"}], "created_by": "a",
        "duration_s": 60})
    assert r.status_code == 201 and r.json()["matchers"][0]["value"] == "gpu-node-17"


def test_snapshot_hosts_are_lowercase(client: TestClient) -> None:
    from tests.app.routes.test_snapshots import job_pair, post

    body = json.loads(job_pair()[0].model_dump_json())
    body["host"]["hostname"] = "Snap-HOST"
    r = post(client, body)
    assert r.status_code == 201, r.text
    listed = client.get("/api/v1/hosts/SNAP-host/snapshots")
    assert listed.status_code == 200 and listed.json()["snapshots"], listed.text


@pytest.mark.parametrize("bad", ["a/b", "<img src=x>", "a..b"])
def test_cli_maintenance_refuses_a_bad_host_name(bad: str) -> None:
    done = subprocess.run([sys.executable, "-m", "peerwatch.app.cli", "maintenance", bad, "--for",
                           "1h", "--server", "http://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert "breaks the rule" in done.stderr and HOSTNAME_RULE in done.stderr


@pytest.mark.parametrize("argv", [
    ["drain", "--dry-run", "--server", "http://127.0.0.1:9", "--node", "{}"],
    ["snapshot", "--fabric", "simulated:hgx8", "--hostname", "{}"],
    ["probe", "--fabric", "simulated:hgx8", "--once", "--hostname", "{}"],
])
@pytest.mark.parametrize("bad", ["a/b", "node-1\nstate=resume", "a..b"])
def test_cli_host_options_refuse_a_bad_host_name(argv: list[str], bad: str) -> None:
    done = subprocess.run([sys.executable, "-m", "peerwatch.app.cli",
                           *(bad if a == "{}" else a for a in argv)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert "breaks the rule" in done.stderr.splitlines()[-1] and HOSTNAME_RULE in done.stderr
    assert "Traceback" not in done.stderr


def test_a_window_for_a_host_never_seen_says_so(client: TestClient,
                                                capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from peerwatch.app.cli.commands.maintenance import run

    r = client.post("/api/v1/maintenance", headers=ADMIN,
                    json={"host": "not-yet-racked", "duration_s": 60})
    assert r.status_code == 201 and r.json()["host_known"] is False
    assert _post(client, "Known-Host").status_code == 201
    r = client.post("/api/v1/maintenance", headers=ADMIN,
                    json={"host": "KNOWN-host", "duration_s": 60})
    assert r.status_code == 201 and r.json()["host_known"] is True
    monkeypatch.setenv("PEERWATCH_ADMIN_TOKEN", ADMIN_TOKEN)
    args = argparse.Namespace(host="typo-host", duration="1h", server="http://testserver",
                              token_file=None, comment="", by="alice")
    assert run(args, transport=client._transport) == 0
    assert "no host 'typo-host' has reported" in capsys.readouterr().err


DRAIN_ACTION = {"scheduler": "slurm", "kind": "take_out", "mode": "act",
                "reason": "GPU5 down", "actor": "peerwatch-drain@head"}


@pytest.mark.parametrize("bad", ["a/b", "node-1\nstate=resume", "node-1 state=resume", "a..b",
                                 "-a", "x" * 254, "", "a;b", "$(reboot)"])
def test_drain_actions_follow_the_host_rule(bad: str, client: TestClient) -> None:
    """What `peerwatch drain` records is what it hands to scontrol or the Kubernetes API:
    a name no host can have is refused before anything is stored."""
    r = client.post("/api/v1/actions", headers=ADMIN, json={**DRAIN_ACTION, "host": bad})
    assert r.status_code == 422, r.text
    if bad and len(bad) <= 253:  # else the length bound says it first
        assert "breaks the rule" in r.text and HOSTNAME_RULE in r.text, r.text
    assert client.get("/api/v1/actions").json()["actions"] == []
    assert client.get("/api/v1/drain/marks").json()["marks"] == []


def test_drain_actions_and_marks_use_the_canonical_name(client: TestClient) -> None:
    r = client.post("/api/v1/actions", headers=ADMIN, json={**DRAIN_ACTION, "host": "GPU-B"})
    assert r.status_code == 201 and r.json()["host"] == "gpu-b", r.text
    [mark] = client.get("/api/v1/drain/marks?host=Gpu-B").json()["marks"]
    assert mark["host"] == "gpu-b"
    [action] = client.get("/api/v1/actions?host=GPU-b").json()["actions"]
    assert action["host"] == "gpu-b"


@pytest.mark.parametrize("url", ["/api/v1/actions?host=a/b", "/api/v1/drain/marks?host=a/b",
                                 "/api/v1/actions?host=a%0Ab", "/api/v1/drain/marks?host=-x"])
def test_drain_reads_follow_the_host_rule(url: str, client: TestClient) -> None:
    r = client.get(url)
    assert r.status_code == 422 and HOSTNAME_RULE in r.text, r.text
