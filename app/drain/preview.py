"""`--scheduler none`: the fleet peerwatch knows, as if every host were a node in service.

For watching the policy decide before any scheduler is wired up (the demo's `peerwatch drain
--scheduler none --dry-run`): it lists the server's hosts and cannot change anything, so it
runs only with --dry-run or `mode: observe` (which records what would have been done).
"""

from __future__ import annotations

from peerwatch.app.drain.client import DrainClient
from peerwatch.app.drain.facts import SchedNode


class NoScheduler(RuntimeError):
    """Asked to act with no scheduler behind it."""


class FleetPreview:
    name = "none"

    def __init__(self, client: DrainClient) -> None:
        self.client = client

    def nodes(self) -> list[SchedNode]:
        facts, _marks, _breaker = self.client.state(self.name, "observe", 600.0)
        return [SchedNode(host) for host in sorted(facts)]

    def _refuse(self, name: str) -> None:
        raise NoScheduler(f"{name}: --scheduler none cannot act; use --dry-run or mode: observe")

    def take_out(self, name: str, reason: str) -> None:
        self._refuse(name)

    def put_back(self, name: str) -> None:
        self._refuse(name)

    def forget(self, name: str) -> None:
        """Nothing of peerwatch's is on a node without a scheduler."""
