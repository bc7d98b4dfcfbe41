"""Deliver job snapshots to the server, or keep them on disk until it answers.

A Slurm prolog/epilog must never fail a job, nor lose its snapshot, because the server is
away. So `post_snapshot` sends the new snapshot (through the probe's `Sender`, which
classifies the answer), writes it to the snapshot spool when the server did not take it, and
then delivers what earlier calls spooled, oldest first, up to `REPLAY_LIMIT` per call (a
prolog stays quick): the epilog delivers the prolog's snapshot, the next job's prolog
delivers both. `peerwatch snapshot --flush` delivers the spool without taking a snapshot
(for a timer, or after an outage).

The spool is one file per snapshot, written atomically (`probes/agent/spool.py`'s
`atomic_write`), named by time and snapshot id, so a prolog and an epilog running at once on
a shared node never collide and need no lock; sending one file twice is harmless (the server
is idempotent on `snapshot_id`). It is bounded (`MAX_FILES`, oldest dropped first). A file
that is no snapshot, or that the server refused for good, is set aside (`.corrupt`,
`.rejected`) and never retried.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from peerwatch.probes.agent.sender import Outcome, Sender
from peerwatch.probes.agent.spool import CORRUPT_SUFFIX, REJECTED_SUFFIX, atomic_write
from peerwatch.probes.snapshot import Snapshot

log = logging.getLogger(__name__)

REPLAY_LIMIT = 20
MAX_FILES = 1000
SUFFIX = ".snapshot.json"


@dataclass
class Delivery:
    """What one call did: lines for the operator's log, and whether the new one is safe."""

    delivered: bool = False  # the new snapshot is on the server
    spooled: bool = False  # ... or waits in the spool
    replayed: int = 0  # spooled snapshots delivered by this call
    lines: list[str] = field(default_factory=list)

    @property
    def kept(self) -> bool:
        return self.delivered or self.spooled


class SnapshotSpool:
    """Undelivered snapshots in one directory (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def put(self, snapshot: Snapshot) -> Path:
        name = f"{time.time_ns():020d}-{snapshot.snapshot_id}{SUFFIX}"
        atomic_write(self.directory, name, snapshot.model_dump_json().encode())
        for old in self.pending()[:-MAX_FILES]:
            log.warning("snapshot spool full: dropping %s", old.name)
            old.unlink(missing_ok=True)
        return self.directory / name

    def pending(self) -> list[Path]:
        return sorted(self.directory.glob(f"*{SUFFIX}"))

    def load(self, path: Path) -> Snapshot | None:
        try:
            return Snapshot.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None  # another call delivered it meanwhile
        except (OSError, ValidationError, ValueError) as exc:
            log.error("spooled snapshot %s is unreadable (%s): set aside", path.name,
                      str(exc).splitlines()[0])
            self.set_aside(path, CORRUPT_SUFFIX)
            return None

    def set_aside(self, path: Path, suffix: str) -> None:
        try:
            path.replace(path.with_name(path.name + suffix))
        except FileNotFoundError:
            pass


def post_snapshot(snapshot: Snapshot | None, sender: Sender,
                  spool: SnapshotSpool | None) -> Delivery:
    """Send `snapshot` (None: only deliver the spool), spool it if the server did not take
    it, then replay the spool while the server keeps taking them."""
    out = Delivery()
    if snapshot is not None:
        answer = sender.send(snapshot)
        if answer.outcome is Outcome.DELIVERED:
            out.delivered = True
            out.lines.append(f"snapshot {snapshot.snapshot_id} delivered")
        elif answer.outcome is Outcome.REJECTED or spool is None:
            out.lines.append(f"snapshot {snapshot.snapshot_id} not delivered "
                             f"({answer.describe()})")
            return out
        else:
            path = spool.put(snapshot)
            out.spooled = True
            out.lines.append(f"server did not take the snapshot ({answer.describe()}); "
                             f"spooled as {path}")
            return out
    if spool is not None:
        _replay(sender, spool, out)
    return out


def _replay(sender: Sender, spool: SnapshotSpool, out: Delivery) -> None:
    for path in spool.pending()[:REPLAY_LIMIT]:
        snap = spool.load(path)
        if snap is None:
            continue
        answer = sender.send(snap)
        if answer.outcome is Outcome.DELIVERED:
            path.unlink(missing_ok=True)
            out.replayed += 1
        elif answer.outcome is Outcome.REJECTED:
            spool.set_aside(path, REJECTED_SUFFIX)
            out.lines.append(f"spooled {path.name} refused for good ({answer.describe()}); "
                             "set aside")
        else:
            out.lines.append(f"spooled snapshots wait: {answer.describe()}")
            return
    if out.replayed:
        out.lines.append(f"delivered {out.replayed} spooled snapshot(s)")
