"""The on-disk spool: reports the server has not acknowledged yet wait here, safely.

Why: a probe must never lose a measurement because the server was away (restart, network
partition, upgrade). Each undelivered report is one file, written atomically (temporary
file, fsync, rename, fsync of the directory) so a crash or power cut leaves either the whole
report or nothing. File names start with a zero-padded sequence number, so sorting names is
oldest-first. The spool is bounded in bytes: when a new report does not fit, the oldest are
dropped and counted; the count travels in the next report (`cost.dropped_reports`) so the
server knows data is missing rather than silently seeing a gap. A file that cannot be read
back as a report is moved aside (`<name>.corrupt`) with a logged error and the rest are
still sent; a report the server refused is moved aside as `<name>.rejected`, also counted.

One probe owns a spool directory at a time (an exclusive `flock` on `.lock`), so two agents
pointed at the same directory fail loudly instead of interleaving. A spool directory that
cannot be used at all (read-only, not a directory) does not stop the agent: `open_spool`
warns and returns a `SendOnlySpool`, which sends while the server answers and counts each
report it could not keep as dropped.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from peerwatch.probes.errors import PeerwatchProbeError
from peerwatch.probes.report import Report

log = logging.getLogger(__name__)

_ENTRY = re.compile(r"^(\d{12})-[0-9a-f-]{36}\.json$")
_TMP_PREFIX = ".tmp-"
_DROPS_FILE = "dropped"
CORRUPT_SUFFIX = ".corrupt"
REJECTED_SUFFIX = ".rejected"
KEEP_SET_ASIDE = 50  # set-aside files kept for inspection; older ones are deleted


class SpoolLocked(PeerwatchProbeError):
    """Another process already owns this spool directory."""


@dataclass(frozen=True, order=True)
class SpoolEntry:
    """One spooled report file; ordering by name is ordering by age."""

    name: str
    size: int


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(directory: Path, name: str, data: bytes) -> None:
    """Write `data` to `directory/name` so readers see the old state or the whole new file."""
    tmp = directory / f"{_TMP_PREFIX}{name}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, directory / name)
    except BaseException:  # disk full, I/O error: leave no partial file behind
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(directory)


class Spool:
    """A bounded, crash-safe, oldest-first queue of reports on disk."""

    def __init__(self, directory: Path, max_bytes: int) -> None:
        if max_bytes <= 0:
            raise ValueError(f"spool max_bytes must be positive, got {max_bytes}")
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock_fd = self._lock()
        self._entries = self._scan()
        self._next_seq = self._entries_max_seq() + 1
        self._dropped = self._read_drops()

    # ------------------------------------------------------------------ ownership

    def _lock(self) -> int:
        fd = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise SpoolLocked(
                f"spool directory {self.directory} is in use by another probe; "
                "give each probe its own --spool-dir"
            ) from exc
        return fd

    def close(self) -> None:
        """Release the directory so another process (or a restarted probe) can own it."""
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ state

    def _scan(self) -> list[SpoolEntry]:
        entries = []
        for path in self.directory.iterdir():
            if path.name.startswith(_TMP_PREFIX):
                path.unlink(missing_ok=True)  # a write interrupted by a crash: never renamed
            elif _ENTRY.match(path.name):
                entries.append(SpoolEntry(path.name, path.stat().st_size))
        return sorted(entries)

    def _entries_max_seq(self) -> int:
        return int(self._entries[-1].name[:12]) if self._entries else 0

    def entries(self) -> list[SpoolEntry]:
        """Spooled reports, oldest first."""
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def size_bytes(self) -> int:
        return sum(e.size for e in self._entries)

    # ------------------------------------------------------------------ drops

    def _read_drops(self) -> int:
        path = self.directory / _DROPS_FILE
        try:
            return max(0, int(path.read_text().strip() or 0))
        except FileNotFoundError:
            return 0
        except (OSError, ValueError) as exc:
            log.error("spool: cannot read drop count from %s (%s); starting from 0", path, exc)
            return 0

    def _add_drops(self, n: int) -> None:
        self._dropped += n
        try:
            atomic_write(self.directory, _DROPS_FILE, str(self._dropped).encode())
        except OSError as exc:  # the count stays right in memory; only a restart loses it
            log.error("spool: cannot persist the drop count in %s: %s", self.directory, exc)

    def note_lost(self) -> None:
        """A report that could not even be written here (disk full, read-only): count it."""
        self._add_drops(1)

    def dropped(self) -> int:
        """Reports lost (evicted, corrupt, rejected) not yet announced in a sent report."""
        return self._dropped

    def acknowledge_drops(self, n: int) -> None:
        """`n` drops were announced in a report that is now delivered or spooled itself."""
        if n > 0:
            self._add_drops(-min(n, self._dropped))

    # ------------------------------------------------------------------ queue

    def put(self, report: Report) -> SpoolEntry | None:
        """Spool one report, evicting the oldest to stay within bounds. None: it was dropped."""
        data = report.model_dump_json().encode()
        if len(data) > self.max_bytes:
            log.error("spool: report %s (%d bytes) exceeds the whole spool (%d bytes); dropped",
                      report.report_id, len(data), self.max_bytes)
            self._add_drops(1)
            return None
        evicted = 0
        total = self.size_bytes()
        while self._entries and total + len(data) > self.max_bytes:
            oldest = self._entries.pop(0)
            (self.directory / oldest.name).unlink(missing_ok=True)
            total -= oldest.size
            evicted += 1
        if evicted:
            log.warning("spool: full (%d bytes max); dropped the %d oldest report(s)",
                        self.max_bytes, evicted)
            self._add_drops(evicted)
        entry = SpoolEntry(f"{self._next_seq:012d}-{report.report_id}.json", len(data))
        atomic_write(self.directory, entry.name, data)
        self._next_seq += 1
        self._entries.append(entry)
        return entry

    def load(self, entry: SpoolEntry) -> Report | None:
        """Read one spooled report back. None: it was missing or corrupt (and set aside)."""
        path = self.directory / entry.name
        try:
            return Report.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            log.warning("spool: %s vanished; skipping it", path)
            self._forget(entry)
            return None
        except (OSError, ValidationError, ValueError) as exc:
            log.error("spool: %s is not a valid report, moved aside as %s%s: %s",
                      path, entry.name, CORRUPT_SUFFIX, _first_line(exc))
            self.set_aside(entry, CORRUPT_SUFFIX)
            return None

    def remove(self, entry: SpoolEntry) -> None:
        """The server has the report: forget it."""
        (self.directory / entry.name).unlink(missing_ok=True)
        self._forget(entry)

    def set_aside(self, entry: SpoolEntry, suffix: str) -> None:
        """Move a report that can never be delivered out of the queue, keeping it to inspect."""
        path = self.directory / entry.name
        try:
            os.replace(path, path.with_name(entry.name + suffix))
        except FileNotFoundError:
            pass
        self._forget(entry)
        self._add_drops(1)
        self._prune_set_aside()

    def set_aside_report(self, report: Report, suffix: str) -> None:
        """Keep a report the server refused (never spooled) for inspection, counted as lost."""
        name = f"{self._next_seq:012d}-{report.report_id}.json{suffix}"
        self._next_seq += 1
        atomic_write(self.directory, name, report.model_dump_json().encode())
        self._add_drops(1)
        self._prune_set_aside()

    def _forget(self, entry: SpoolEntry) -> None:
        self._entries = [e for e in self._entries if e.name != entry.name]

    def set_aside_files(self) -> list[Path]:
        return sorted(p for p in self.directory.iterdir()
                      if p.name.endswith((CORRUPT_SUFFIX, REJECTED_SUFFIX)))

    def _prune_set_aside(self) -> None:
        for old in self.set_aside_files()[:-KEEP_SET_ASIDE]:
            old.unlink(missing_ok=True)


class SendOnlySpool:
    """The spool's interface with no disk behind it: nothing waits, each report not
    delivered is counted as dropped and announced in the next one that is."""

    def __init__(self, directory: Path, reason: str) -> None:
        self.directory = Path(directory)
        self.reason = reason
        self._dropped = 0

    def close(self) -> None:
        pass

    def entries(self) -> list[SpoolEntry]:
        return []

    def __len__(self) -> int:
        return 0

    def size_bytes(self) -> int:
        return 0

    def note_lost(self) -> None:
        self._dropped += 1

    def dropped(self) -> int:
        return self._dropped

    def acknowledge_drops(self, n: int) -> None:
        self._dropped -= min(max(n, 0), self._dropped)

    def put(self, report: Report) -> SpoolEntry | None:
        log.error("send-only mode (spool %s unusable: %s): report %s could not be delivered "
                  "now and is dropped (counted)", self.directory, self.reason, report.report_id)
        self.note_lost()
        return None

    def load(self, entry: SpoolEntry) -> Report | None:
        return None

    def remove(self, entry: SpoolEntry) -> None:
        pass

    def set_aside(self, entry: SpoolEntry, suffix: str) -> None:
        self.note_lost()

    def set_aside_report(self, report: Report, suffix: str) -> None:
        self.note_lost()

    def set_aside_files(self) -> list[Path]:
        return []


AnySpool = Spool | SendOnlySpool


def open_spool(directory: Path, max_bytes: int) -> AnySpool:
    """The spool in `directory`; a send-only stand-in, with a warning, when it is unusable."""
    try:
        return Spool(directory, max_bytes)
    except OSError as exc:
        reason = f"{type(exc).__name__}: {exc.strerror or exc}"
        if Path(directory).exists() and not Path(directory).is_dir():
            reason = "it is not a directory"
        log.warning("SPOOL UNUSABLE: %s (%s). Running in SEND-ONLY mode: reports are sent "
                    "while the server answers, and any it cannot take are dropped and "
                    "counted. Fix the directory (--spool-dir) and restart to keep them.",
                    directory, reason)
        return SendOnlySpool(directory, reason)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
