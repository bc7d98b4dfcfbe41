"""A joint test (all-to-all) on the wire: one run over every probed GPU, one result per GPU.

The sweep runs it once (every GPU sends to every other at once: the figures of one GPU
depend on all the others running beside it) and `split` makes one per-GPU result of each
GPU's own samples, so the server stores, judges and shows each GPU's figure as it does
h2d's: on the diagonal, against its topology, its baseline and its fleet peers.
"""

from __future__ import annotations

import statistics

from pydantic import ValidationError

from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.report import TransferResult


def named(spec: TestSpec) -> tuple[int | None, int | None, list[int]]:
    """The (src, dst, gpus) a result of `spec` names on the wire: a joint test's first GPU
    (`split` makes one result per GPU of it), else the spec's own."""
    if spec.joint:
        return spec.gpus[0], None, []
    return spec.src, spec.dst, list(spec.gpus)


def split(spec: TestSpec, one: TransferResult, per_gpu: dict[int, list[float]]
          ) -> list[TransferResult]:
    """One result per GPU of a joint run, from each GPU's own samples (the run's where a
    GPU has none). The run's GPU time is shared among them, so the sweep's cost counts it
    once. A failed or hung run fails every GPU's result with the same words: a GPU that
    hangs an all-to-all is a clear failure within the watchdog's limit, never a wait
    (NVIDIA/nccl#1531)."""
    share = one.gpu_time_s / len(spec.gpus)
    if one.error is not None:
        return [one.model_copy(update={"src": g, "gpu_time_s": share}) for g in spec.gpus]
    out = []
    for g in spec.gpus:
        samples = per_gpu.get(g) or one.samples
        try:
            out.append(TransferResult.model_validate({
                **one.model_dump(), "src": g, "samples": samples, "gpu_time_s": share,
                "value": statistics.median(samples)}))
        except (ValidationError, ValueError) as exc:
            out.append(one.model_copy(update={
                "src": g, "gpu_time_s": share, "value": None, "samples": [],
                "verified": False, "error": f"impossible measurement {samples}: {exc}"[:2000]}))
    return out
