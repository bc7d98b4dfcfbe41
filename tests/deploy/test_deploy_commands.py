"""Every command the deployment files run must parse with the real `peerwatch` CLI.

docker-compose.yml and the Kubernetes manifests call `peerwatch` subcommands with options;
when a command's options change, these files must change with it. This test keeps them honest.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from peerwatch.app.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def _compose_commands() -> list[tuple[str, list[str]]]:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    out = []
    for name, svc in compose["services"].items():
        if svc.get("image", "").startswith("peerwatch") or "build" in svc:
            out.append((f"compose:{name}", [str(a) for a in svc["command"]]))
    return out


def _k8s_commands() -> list[tuple[str, list[str]]]:
    out = []
    for path in sorted((ROOT / "deploy" / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            spec = (doc or {}).get("spec", {})
            pod = spec.get("template", {}).get("spec", {})
            for c in pod.get("containers", []):
                if c.get("image", "").startswith("peerwatch"):
                    out.append((f"{path.name}:{c['name']}", [str(a) for a in c["args"]]))
    return out


COMMANDS = _compose_commands() + _k8s_commands()


def test_there_are_commands_to_check() -> None:
    assert len(COMMANDS) >= 6


@pytest.mark.parametrize(("where", "argv"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_deploy_command_parses(where: str, argv: list[str]) -> None:
    # Compose/k8s substitute ${VAR} and $(VAR) before peerwatch sees them.
    argv = ["token" if "$" in a else a for a in argv]
    args = build_parser().parse_args(argv)
    assert callable(args.func), where
