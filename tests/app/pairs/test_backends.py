"""What a pair job asks of its scheduler: Slurm's sbatch command line and the Kubernetes Job
manifest (rendered only: not run against a live API server here, docs/network.md)."""

from __future__ import annotations

import json

from peerwatch.app.pairs.k8s import CREDENTIAL, KubernetesPairs
from peerwatch.app.pairs.slurm import SlurmPairs


def test_sbatch_asks_for_two_idle_nodes_in_the_scavenger_partition() -> None:
    argv = SlurmPairs("http://pw:8000", qos="scavenger").sbatch_argv(7, "gpu-1", "gpu-9")
    assert argv[0] == "sbatch" and "--partition=scavenger" in argv and "--qos=scavenger" in argv
    assert {"--nodes=2", "--ntasks-per-node=1", "--nodelist=gpu-1,gpu-9", "--exclusive",
            "--no-requeue", "--output=/dev/null"} <= set(argv)
    kept = SlurmPairs("http://pw:8000", output="/var/log/pw/pair-%j.out").sbatch_argv(
        7, "gpu-1", "gpu-9")
    assert "--output=/var/log/pw/pair-%j.out" in kept and "--output=/dev/null" not in kept
    assert argv[-1] == ("--wrap=srun --kill-on-bad-exit=1 peerwatch pairs rank --job 7 "
                        "--server http://pw:8000")


def test_no_credential_travels_with_a_job() -> None:
    argv = SlurmPairs("http://pw:8000").sbatch_argv(7, "gpu-1", "gpu-9")
    manifest = json.dumps(KubernetesPairs("http://pw:8000").manifest(7, "gpu-1", "gpu-9"))
    for text in (" ".join(argv), manifest):
        words = text.replace("probe-token", "").replace("automountServiceAccountToken", "")
        assert "token" not in words.lower()
        assert "Bearer" not in text and "secret" not in text.lower()


def test_the_k8s_job_pins_two_nodes_apart_at_low_priority() -> None:
    m = KubernetesPairs("http://pw:8000", queue="pairs").manifest(7, "gpu-1", "gpu-9")
    spec, pod = m["spec"], m["spec"]["template"]["spec"]
    assert (spec["completions"], spec["parallelism"], spec["completionMode"]) == (2, 2, "Indexed")
    assert spec["suspend"] is True  # Kueue admits it
    assert m["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "pairs"
    assert pod["priorityClassName"] == "peerwatch-scavenger"
    assert pod["automountServiceAccountToken"] is False
    [term] = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    assert term["matchExpressions"][0]["values"] == ["gpu-1", "gpu-9"]
    [anti] = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    assert anti["labelSelector"]["matchLabels"] == {"peerwatch.io/pair-job": "7"}
    [vol] = pod["volumes"]
    assert vol["hostPath"] == {"path": CREDENTIAL, "type": "File"}
    assert pod["containers"][0]["volumeMounts"][0]["readOnly"] is True


def test_without_kueue_the_job_is_not_suspended() -> None:
    m = KubernetesPairs("http://pw:8000").manifest(7, "a", "b")
    assert m["spec"]["suspend"] is False
    assert "kueue.x-k8s.io/queue-name" not in m["metadata"]["labels"]
