"""The Kustomize chart (deploy/kustomize: a base over deploy/k8s and one overlay per way to
run) rendered by a real `kubectl kustomize` and every rendered object validated: the
Kubernetes kinds by kubernetes-validate against the API schemas (strict: unknown fields
fail), the Prometheus Operator kinds (ServiceMonitor, PodMonitor, PrometheusRule) against
the structural subset shipped in prometheus_operator_schema.yaml (not the operator's own
CRDs, which are not installed here); any other kind fails. Then what each overlay promises:
replicas and the database, the probe on GPU nodes, the drain controller with its RBAC as in
deploy/k8s/drain.yaml, scrape objects that select what the manifests expose, and the
PrometheusRule equal to deploy/prometheus/peerwatch-rules.yml (and regenerated, not edited).

No cluster runs here: nothing is applied.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.conftest import require

ROOT = Path(__file__).resolve().parents[2]
KUSTOMIZE = ROOT / "deploy" / "kustomize"
OVERLAYS = sorted(p.name for p in (KUSTOMIZE / "overlays").iterdir() if p.is_dir())
SCHEMA = yaml.safe_load((Path(__file__).parent / "prometheus_operator_schema.yaml").read_text())
K8S_VERSION = kubernetes_validate.latest_version()
Object = dict[str, Any]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("prometheusrule", KUSTOMIZE / "prometheusrule.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def render(overlay: str) -> list[Object]:
    kubectl = shutil.which("kubectl")
    require(kubectl is not None, "kubectl with kustomize (it renders deploy/kustomize)")
    assert kubectl
    done = subprocess.run([kubectl, "kustomize", str(KUSTOMIZE / "overlays" / overlay)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"kubectl kustomize {overlay}: {done.stderr}"
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def validate(obj: Object) -> None:
    kind = obj["kind"]
    if obj["apiVersion"].startswith("monitoring.coreos.com/"):
        assert kind in SCHEMA["kinds"], f"no schema for the operator kind {kind}"
        schema = {"$defs": SCHEMA["$defs"], **SCHEMA["kinds"][kind]}
        jsonschema.validate(obj, schema)
    else:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def one(objects: list[Object], kind: str, name: str) -> Object:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} rendered"
    return found[0]


def container(workload: Object) -> Object:
    pod: Object = workload["spec"]["template"]["spec"]
    return pod["containers"][0]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_rendered_object_is_valid(overlay: str) -> None:
    objects = render(overlay)
    assert len(objects) >= 12
    for obj in objects:
        try:
            validate(obj)
        except (kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError,
                jsonschema.ValidationError) as exc:
            pytest.fail(f"{overlay}: {obj['kind']}/{obj['metadata']['name']}: {exc}")


def test_the_checks_fail_bad_objects() -> None:
    """Each validator can fail: an unknown field, an unknown kind, a rule without `expr`."""
    objects = render("fleet")
    monitor = one(objects, "ServiceMonitor", "peerwatch")
    typo = {**monitor, "spec": {**monitor["spec"], "endpoint": monitor["spec"]["endpoints"]}}
    with pytest.raises(jsonschema.ValidationError):
        validate(typo)
    rule = one(objects, "PrometheusRule", "peerwatch")
    groups = [{**rule["spec"]["groups"][0], "rules": [{"alert": "NoExpr"}]}]
    with pytest.raises(jsonschema.ValidationError):
        validate({**rule, "spec": {"groups": groups}})
    with pytest.raises(AssertionError, match="no schema"):
        validate({"apiVersion": "monitoring.coreos.com/v1", "kind": "Probe"})
    deployment = one(objects, "Deployment", "peerwatch")
    bad = {**deployment, "spec": {**deployment["spec"], "replica": 2}}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(bad)


def test_fleet_runs_replicas_on_the_postgresql_secret() -> None:
    objects = render("fleet")
    server = one(objects, "Deployment", "peerwatch")
    assert server["spec"]["replicas"] == 3
    for workload in (server, one(objects, "Job", "peerwatch-migrate")):
        assert container(workload)["envFrom"] == [{"secretRef": {"name": "peerwatch-server"}}]
        env = [e["name"] for e in container(workload).get("env", [])]
        assert "PEERWATCH_DATABASE_URL" not in env  # the URL comes from the secret alone
    assert container(server)["env"] == [{"name": "PEERWATCH_SECRET_FILE",
                                         "value": "/etc/peerwatch/secret/credential-secret"}]
    assert not [o for o in objects if o["kind"] == "PersistentVolumeClaim"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_no_secret_is_shipped(overlay: str) -> None:
    """Secrets are made by the operator: a rendered one would overwrite theirs on every
    `kubectl apply -k`, and a default in it would be everyone's."""
    objects = render(overlay)
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Secret"] == []
    probe = container(one(objects, "DaemonSet", "peerwatch-probe"))
    assert "--token" not in probe["args"]  # argv is readable by every user of the node
    assert probe["args"][probe["args"].index("--token-file") + 1] == "/etc/peerwatch/probe-token"
    assert all("TOKEN" not in e["name"] for e in probe.get("env", []))


def test_single_node_runs_one_server_on_sqlite_on_a_claim() -> None:
    objects = render("single-node")
    server = one(objects, "Deployment", "peerwatch")
    assert server["spec"]["replicas"] == 1
    assert server["spec"]["strategy"] == {"type": "Recreate"}
    claim = one(objects, "PersistentVolumeClaim", "peerwatch-data")
    for workload in (server, one(objects, "Job", "peerwatch-migrate")):
        env = {e["name"]: e["value"] for e in container(workload)["env"]}
        assert env["PEERWATCH_DATABASE_URL"] == "sqlite:////var/lib/peerwatch/peerwatch.db"
        volumes = workload["spec"]["template"]["spec"]["volumes"]
        assert {"name": "data", "persistentVolumeClaim":
                {"claimName": claim["metadata"]["name"]}} in volumes
        assert {"name": "data", "mountPath": "/var/lib/peerwatch"} in (
            container(workload)["volumeMounts"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_probe_runs_on_gpu_nodes_and_is_scraped(overlay: str) -> None:
    objects = render(overlay)
    probe = one(objects, "DaemonSet", "peerwatch-probe")
    pod = probe["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in (
        pod["tolerations"])
    monitor = one(objects, "PodMonitor", "peerwatch-probe")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= (
        probe["spec"]["template"]["metadata"]["labels"].items())
    ports = {p["name"] for p in container(probe)["ports"]}
    assert {e["port"] for e in monitor["spec"]["podMetricsEndpoints"]} <= ports


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_service_monitor_selects_the_server_service(overlay: str) -> None:
    objects = render(overlay)
    service = one(objects, "Service", "peerwatch")
    monitor = one(objects, "ServiceMonitor", "peerwatch")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= (
        service["metadata"]["labels"].items())
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= (
        {p["name"] for p in service["spec"]["ports"]})


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_drain_controller_is_deploy_k8s_drain_yaml(overlay: str) -> None:
    """The chart renders deploy/k8s/drain.yaml's objects unchanged (through
    deploy/k8s/kustomization.yaml): reused, not copied."""
    rendered = render(overlay)
    shipped = [d for d in yaml.safe_load_all((ROOT / "deploy/k8s/drain.yaml").read_text()) if d]
    for obj in shipped:
        got = one(rendered, obj["kind"], obj["metadata"]["name"])
        assert got == obj, f"{obj['kind']}/{obj['metadata']['name']} differs from drain.yaml"
    binding = one(rendered, "ClusterRoleBinding", "peerwatch-drain")
    controller = one(rendered, "Deployment", "peerwatch-drain")
    account = controller["spec"]["template"]["spec"]["serviceAccountName"]
    assert {"kind": "ServiceAccount", "name": account, "namespace": "peerwatch"} in (
        binding["subjects"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_prometheus_rule_is_the_rules_file(overlay: str) -> None:
    rule = one(render(overlay), "PrometheusRule", "peerwatch")
    rules = yaml.safe_load((ROOT / "deploy/prometheus/peerwatch-rules.yml").read_text())
    assert rule["spec"]["groups"] == rules["groups"]


def test_prometheus_rule_file_is_generated_not_edited() -> None:
    generator = _generator()
    assert generator.OUTPUT.read_text() == generator.render(), (
        "deploy/kustomize/base/prometheusrule.yaml is stale or edited by hand: "
        "run `python deploy/kustomize/prometheusrule.py`")


def test_generator_refuses_a_file_without_groups(tmp_path: Path) -> None:
    bad = tmp_path / "rules.yml"
    bad.write_text("rules: []\n")
    with pytest.raises(ValueError, match=f"{bad}: no `groups` list"):
        _generator().render(bad)
