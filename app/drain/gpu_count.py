"""How many GPUs the scheduler itself gives a node: Slurm's GRES (`Gres=gpu:8`,
`Gres=gpu:h100:8(S:0-1)`, several entries comma-separated) and Kubernetes' `nvidia.com/gpu`
capacity. A return needs NVML to list at least that many (app/drain/proof.py); None where
the scheduler gives no count (a CPU node, a Slurm without GRES)."""

from __future__ import annotations

import re
from typing import Any

_GRES_GPU = re.compile(r"^gpu(?::[^:(,]+)?:(\d+)")
K8S_GPU = "nvidia.com/gpu"


def slurm_gres_gpus(line: str) -> int | None:
    """The GPU count of a `scontrol show node --oneliner` line's `Gres=` (None: no GPUs)."""
    field = next((f for f in line.split() if f.startswith("Gres=")), None)
    if field is None:
        return None
    counts = [int(m.group(1)) for entry in field.removeprefix("Gres=").split(",")
              if (m := _GRES_GPU.match(entry))]
    return sum(counts) if counts else None


def k8s_capacity_gpus(node: dict[str, Any]) -> int | None:
    """`status.capacity["nvidia.com/gpu"]` of a Node as the API's JSON (None: not set)."""
    value = ((node.get("status") or {}).get("capacity") or {}).get(K8S_GPU)
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
