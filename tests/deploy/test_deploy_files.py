"""The deployment files checked by real tools (all from the dev extra, so `make test` runs
them on a fresh machine): the Dockerfile by hadolint, the Kubernetes manifests against the
Kubernetes API schemas (kubernetes-validate, strict: unknown fields fail), docker-compose.yml
by podman-compose's parser (`--dry-run config`: parsed and resolved, nothing run). Each tool
is also shown a broken file, so a tool that accepts anything cannot pass for a check.

No container is built or run here: the development machines have no container engine.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MANIFESTS = sorted(m for m in (ROOT / "deploy" / "k8s").glob("*.yaml")
                   if m.name != "kustomization.yaml")  # Kustomize, not an API object


def tool(name: str, *argv: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    exe = shutil.which(name, path=str(BIN)) or shutil.which(name)
    assert exe, f"{name} is not installed: it comes with `pip install -e '.[dev]'`"
    return subprocess.run([exe, *map(str, argv)], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_dockerfile_passes_hadolint() -> None:
    result = tool("hadolint", "--failure-threshold", "info", ROOT / "Dockerfile")
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_fails_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN cd /tmp && pip install requests\nCMD peerwatch serve\n")
    result = tool("hadolint", bad)
    assert result.returncode != 0 and "DL3006" in result.stdout  # untagged base image


@pytest.mark.parametrize("manifest", MANIFESTS, ids=[m.name for m in MANIFESTS])
def test_kubernetes_manifest_matches_the_api_schema(manifest: Path) -> None:
    result = tool("kubernetes-validate", "--strict", manifest)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passed" in result.stdout


def test_kubernetes_validate_fails_an_unknown_field(tmp_path: Path) -> None:
    docs = list(yaml.safe_load_all((ROOT / "deploy" / "k8s" / "server.yaml").read_text()))
    deployment = next(d for d in docs if d and d["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["imagee"] = "typo"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(deployment))
    assert tool("kubernetes-validate", "--strict", bad).returncode != 0


def compose_config(path: Path) -> subprocess.CompletedProcess:
    return tool("podman-compose", "--dry-run", "-f", path, "config", cwd=path.parent)


def test_compose_file_parses_and_resolves() -> None:
    result = compose_config(ROOT / "docker-compose.yml")
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)
    services = resolved["services"]
    assert {"postgres", "migrate", "server", "probe-hgx8", "prometheus"} <= set(services)
    stages = set(re.findall(r"^FROM \S+ AS (\S+)", (ROOT / "Dockerfile").read_text(), re.M))
    targets = {svc["build"].get("target") for svc in services.values() if "build" in svc}
    assert "probe" in targets and targets - {None} <= stages, (targets, stages)
    assert services["server"]["environment"]["PEERWATCH_DATABASE_URL"].startswith("postgresql")


PUBLISHED = {"server": "8000:8000", "prometheus": "9090:9090", "alertmanager": "9093:9093"}


@pytest.mark.parametrize(("bind", "address"), [(None, "127.0.0.1"), ("0.0.0.0", "0.0.0.0"),
                                               ("10.1.2.3", "10.1.2.3")])
def test_compose_publishes_on_loopback_unless_asked(bind: str | None, address: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The server, Prometheus and Alertmanager answer anyone who reaches a published port:
    this machine alone, unless PEERWATCH_BIND names more. Every published port is bound."""
    if bind is None:
        monkeypatch.delenv("PEERWATCH_BIND", raising=False)
    else:
        monkeypatch.setenv("PEERWATCH_BIND", bind)
    result = compose_config(ROOT / "docker-compose.yml")
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    published = {name: svc["ports"] for name, svc in services.items() if svc.get("ports")}
    assert published == {name: [f"{address}:{ports}"] for name, ports in PUBLISHED.items()}


def test_compose_parser_fails_a_broken_file(tmp_path: Path) -> None:
    bad = tmp_path / "docker-compose.yml"
    bad.write_text("services:\n  server:\n    <<: *nowhere\n")
    assert compose_config(bad).returncode != 0
