"""Slurm backend: nodes from `scontrol show node --oneliner`, drain with
`Reason="peerwatch: <reason>"`, resume only a node whose drain reason is still peerwatch's.

Ownership is the reason prefix (as NHC's `[HC]` or `[node_problem]`): a drain with any other
reason is someone else's and is never undone. The reason is re-read just before a resume, so
an operator who re-drained the node meanwhile keeps it.
"""

from __future__ import annotations

import subprocess

from peerwatch.app.drain.facts import SchedNode
from peerwatch.app.drain.gpu_count import slurm_gres_gpus
from peerwatch.app.drain.policy import one_line

PREFIX = "peerwatch:"
OUT_FLAGS = ("DRAIN", "DRAINED", "DRAINING")
REASON_MAX = 250  # Slurm keeps longer reasons, but sinfo -R and tools cut them


class SlurmError(RuntimeError):
    """scontrol failed; the message holds its words."""


def parse_node(line: str) -> SchedNode | None:
    """One `scontrol show node --oneliner` line as a SchedNode (None for a blank line)."""
    if not line.startswith("NodeName="):
        return None
    name = line.split()[0].removeprefix("NodeName=")
    state = ""
    for field in line.split():
        if field.startswith("State="):
            state = field.removeprefix("State=")
    reason = ""
    if " Reason=" in line:
        reason = line.split(" Reason=", 1)[1]
        reason = reason.rsplit(" [", 1)[0] if " [" in reason else reason  # [user@time]
    flags = set(state.replace("*", "").split("+"))
    out = bool(flags & set(OUT_FLAGS))
    return SchedNode(name=name, out=out, ours=out and reason.startswith(PREFIX),
                     reason=reason.strip(), gpus=slurm_gres_gpus(line.split(" Reason=")[0]))


class SlurmBackend:
    name = "slurm"

    def __init__(self, scontrol: str = "scontrol", timeout_s: float = 20.0) -> None:
        self.scontrol = scontrol
        self.timeout_s = timeout_s

    def _run(self, *args: str) -> str:
        try:
            done = subprocess.run([self.scontrol, *args], capture_output=True, text=True,
                                  timeout=self.timeout_s, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SlurmError(f"{self.scontrol} {' '.join(args)}: {exc}") from exc
        if done.returncode != 0:
            raise SlurmError(f"{self.scontrol} {' '.join(args)}: "
                             f"{one_line(done.stderr or done.stdout)}")
        return done.stdout

    def nodes(self) -> list[SchedNode]:
        found = (parse_node(line) for line in self._run("show", "node", "--oneliner")
                 .splitlines())
        return [n for n in found if n is not None]

    def node(self, name: str) -> SchedNode | None:
        return next((n for n in self.nodes() if n.name == name), None)

    @staticmethod
    def reason_text(reason: str) -> str:
        return one_line(f"{PREFIX} {reason}", REASON_MAX)

    def take_out(self, name: str, reason: str) -> None:
        self._run("update", f"nodename={name}", "state=drain",
                  f"reason={self.reason_text(reason)}")

    def put_back(self, name: str) -> None:
        """Resume, if the drain is still peerwatch's; a node already back in service (another
        round, e.g. an overlapping health check, resumed it) is left as it is."""
        now = self.node(name)
        if now is not None and not now.out:
            return
        if now is None or not now.ours:
            raise SlurmError(f"{name} is no longer drained by peerwatch "
                             f"({now.reason if now else 'gone'}): not resumed")
        try:
            self._run("update", f"nodename={name}", "state=resume")
        except SlurmError:
            again = self.node(name)
            if again is not None and not again.out:
                return  # resumed by another round between the check and the resume
            raise

    def forget(self, name: str) -> None:
        """Nothing of peerwatch's stays on a Slurm node once it is resumed or re-drained."""
