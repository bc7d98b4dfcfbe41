"""Slurm backend: nodes from `scontrol show node --oneliner`, drain with
`Reason="peerwatch: <what>; do: <action>"`, resume only a node whose drain reason is still
peerwatch's.

Ownership is the reason prefix (as NHC's `[HC]` or `[node_problem]`): a drain with any other
reason is someone else's and is never undone. Slurm has no compare-and-set, so each write is
bracketed: the node is read again right before the drain or the resume (a person who drained
it since the round's listing keeps it: peerwatch backs off, `BackedOff`) and read back after
(a person's drain that landed on top of peerwatch's is theirs from then on). What is left is
the few milliseconds between the read and the write, which Slurm cannot close.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime

from peerwatch.app.drain.facts import BackedOff, SchedNode
from peerwatch.app.drain.gpu_count import slurm_gres_gpus
from peerwatch.app.drain.names import checked
from peerwatch.app.drain.policy import ACTION_SEP, one_line

PREFIX = "peerwatch:"
OUT_FLAGS = ("DRAIN", "DRAINED", "DRAINING")
# slurmctld keeps any length, but slurmdbd keeps a node event's reason as TINYTEXT (255 bytes):
# a longer one would be cut there mid-word, or in the middle of a UTF-8 character
REASON_MAX_BYTES = 255
ELLIPSIS = "…"


def fit(text: str, limit_bytes: int) -> str:
    """`text` within `limit_bytes` of UTF-8, cut at a word where it must be, with "…"."""
    if len(text.encode()) <= limit_bytes:
        return text
    room = limit_bytes - len(ELLIPSIS.encode())
    cut = text.encode()[:max(room, 0)].decode(errors="ignore")
    if " " in cut[len(cut) // 2:]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ;:,") + ELLIPSIS


def reason_text(reason: str, limit_bytes: int = REASON_MAX_BYTES) -> str:
    """`peerwatch: <what>; do: <action>` within Slurm's limit: the action is what a person
    needs most, so `what` is shortened first (to no less than half the room)."""
    what, sep, action = one_line(reason, 2000).partition(ACTION_SEP)
    head = f"{PREFIX} {what}"
    if len(f"{head}{sep}{action}".encode()) <= limit_bytes or not sep:
        return fit(f"{head}{sep}{action}", limit_bytes)
    head = fit(head, max(limit_bytes - len(f"{sep}{action}".encode()), limit_bytes // 2))
    return head + sep + fit(action, limit_bytes - len(f"{head}{sep}".encode()))


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
    reason, since = "", None
    if " Reason=" in line:
        reason = line.split(" Reason=", 1)[1]
        if " [" in reason:  # [user@time]
            reason, stamp = reason.rsplit(" [", 1)
            since = reason_time(stamp.rstrip("]").rpartition("@")[2])
    flags = set(state.replace("*", "").split("+"))
    out = bool(flags & set(OUT_FLAGS))
    return SchedNode(name=name, out=out, ours=out and reason.startswith(PREFIX),
                     reason=reason.strip(), gpus=slurm_gres_gpus(line.split(" Reason=")[0]),
                     out_since=since)


def reason_time(text: str) -> datetime | None:
    """When the reason was set: slurmctld prints its local time without a zone."""
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except ValueError:
        return None


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
        """The node read now; a name off the host rule is never passed to scontrol."""
        found = (parse_node(line) for line in self._run("show", "node", checked(name),
                                                         "--oneliner")
                 .splitlines())
        return next((n for n in found if n is not None and n.name == name), None)

    def _now(self, name: str) -> SchedNode:
        node = self.node(name)
        if node is None:
            raise SlurmError(f"{name}: no longer in Slurm")
        return node

    def take_out(self, name: str, reason: str) -> None:
        """Drain, unless someone drained the node since the round read it (their reason is
        kept: `BackedOff`); a node already drained by peerwatch (an overlapping round) is
        left as it is."""
        before = self._now(name)
        if before.out:
            if before.ours:
                return
            raise BackedOff(f"{name} was drained by someone else meanwhile ({before.reason}): "
                            "their drain and reason kept")
        self._run("update", f"nodename={checked(name)}", "state=drain",
                  f"reason={reason_text(reason)}")
        after = self._now(name)
        if after.out and not after.ours:
            raise BackedOff(f"{name} was drained by someone else right after peerwatch "
                            f"({after.reason}): their drain and reason kept")

    def put_back(self, name: str) -> None:
        """Resume, if the drain is still peerwatch's (read right before: a person who
        re-drained it keeps it, `BackedOff`); a node already back in service (another round,
        e.g. an overlapping health check, resumed it) is left as it is."""
        before = self._now(name)
        if not before.out:
            return
        if not before.ours:
            raise BackedOff(f"{name} was drained by someone else meanwhile ({before.reason}): "
                            "not resumed, their reason kept")
        try:
            self._run("update", f"nodename={checked(name)}", "state=resume")
        except SlurmError:
            if not self._now(name).out:
                return  # resumed by another round between the check and the resume
            raise
        after = self._now(name)
        if after.out and after.ours:
            raise SlurmError(f"{name}: still drained by peerwatch after the resume")

    def forget(self, name: str) -> None:
        """Nothing of peerwatch's stays on a Slurm node once it is resumed or re-drained."""

    def note_job(self, job: str, text: str) -> None:
        """Tell the job's owner why it did not start here: the job's AdminComment (the
        user's own --comment is left alone; `scontrol show job`, `sacct -o AdminComment`)."""
        self._run("update", f"jobid={job}", f"AdminComment={fit(one_line(text, 2000), 255)}")
