"""The policy file: the documented example loads, defaults hold, and each bad key is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from peerwatch.app.drain.policy import Policy, PolicyError, load_policy

EXAMPLE = Path(__file__).resolve().parents[3] / "deploy" / "drain" / "policy.yaml"


def test_the_documented_example_is_the_defaults() -> None:
    assert load_policy(EXAMPLE.read_text()) == Policy()


def test_an_empty_file_is_the_defaults_and_mode_defaults_to_observe() -> None:
    policy = load_policy("")
    assert policy == Policy() and not policy.acts


def test_values_are_read() -> None:
    p = load_policy("mode: act\ndebounce: 1m30s\nreturn_after: 60\n"
                    "take_out_on: {degraded: false, alerts: [PCIeLinkDowntrained]}\n"
                    "breaker: {window: 1h, max_per_window: 3, max_share_out: 0.5}\n")
    assert p.acts and p.debounce_s == 90 and p.return_after_s == 60
    assert p.degraded_min_lost_gpus is None and p.alerts == ("PCIeLinkDowntrained",)
    assert (p.breaker.window_s, p.breaker.max_per_window, p.breaker.max_share_out) == \
        (3600, 3, 0.5)


@pytest.mark.parametrize(("text", "named"), [
    ("mode: enforce", "mode: expected observe or act"),
    ("modes: act", "modes: unknown key"),
    ("debounce: soon", "debounce: 'soon' is not a duration"),
    ("debounce: -5", "debounce: -5 must be zero or more"),
    ("take_out_on: {gpu_dwn: true}", "take_out_on.gpu_dwn: unknown key"),
    ("take_out_on: {host_down: yes please}", "take_out_on.host_down: expected true or false"),
    ("take_out_on: {degraded: {min_lost_gpus: 0}}", "take_out_on.degraded.min_lost_gpus"),
    ("take_out_on: {alerts: GPUMissing}", "take_out_on.alerts: expected a list"),
    ("breaker: {max_share_out: 2}", "breaker.max_share_out"),
    ("breaker: {max_per_window: 0}", "breaker.max_per_window"),
    ("breaker: 5", "breaker: expected a mapping"),
    ("kubernetes: {taint: 1}", "kubernetes.taint"),
    ("[1, 2]", "policy: expected a mapping"),
    ("mode: [", "not valid YAML"),
])
def test_a_bad_value_names_its_key(text: str, named: str) -> None:
    with pytest.raises(PolicyError) as err:
        load_policy(text, source="drain.yaml")
    assert str(err.value).startswith("drain.yaml: ") and named in str(err.value)


def test_the_kubernetes_manifests_policy_loads() -> None:
    import yaml

    docs = yaml.safe_load_all((EXAMPLE.parents[1] / "k8s" / "drain.yaml").read_text())
    config = next(d for d in docs if d["kind"] == "ConfigMap")
    assert load_policy(config["data"]["policy.yaml"]).mode == "observe"
