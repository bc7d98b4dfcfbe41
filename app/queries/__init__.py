"""Read-side queries shared by the API, the scheduler/placement and the alerts.

The functions to reach for:
- `get_host(session, name)`: the Host row, or `NotFound` (the API answers 404 with the name).
- `host_health(session, settings, host)`: every verdict of a host (GPUs, links, pairs, host)
  with reasons — a `HostHealth`.
- `gpu_health(session, settings, host)`: per-GPU verdicts; `healthy_gpus(...)`: the healthy
  GPU indexes plus why each other GPU is not.
- `latest_matrix(session, settings, host, test)`: the newest value, expectation, baseline and
  verdict of every ordered pair for one test (`MatrixResponse`).
- `host_summaries(session, settings)`: one `HostSummary` per host (the hosts list).
"""

from peerwatch.app.queries.common import NotFound, get_host
from peerwatch.app.queries.health import gpu_health, healthy_gpus, host_health
from peerwatch.app.queries.hosts import host_summaries
from peerwatch.app.queries.matrix import latest_matrix
from peerwatch.app.records.health import HostHealth

__all__ = [
    "HostHealth", "NotFound", "get_host", "gpu_health", "healthy_gpus", "host_health",
    "host_summaries", "latest_matrix",
]
