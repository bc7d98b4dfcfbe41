"""Follow the kernel log for Xid/SXid lines: `/dev/kmsg`, or the journal where that is what
the host offers; parsing is `kmsg.py`'s.

Why a thread that polls with a timeout: a read of /dev/kmsg blocks until the next record,
and the agent must stop at once on SIGTERM; `poll` with a one-second limit checks the stop
flag between records. At start the reader skips records older than `lookback` (the boot's
whole history would page old Xids again after every agent restart), and a record the kernel
overwrote before it was read (EPIPE) is skipped with a count, not an error. No permission
(a container without CAP_SYSLOG, `dmesg_restrict`) is one clear warning and the reader ends:
NVML's events still come.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import select
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from peerwatch.probes.nvidia.kmsg import LogLine, parse_line, parse_record

log = logging.getLogger(__name__)

OnLine = Callable[[LogLine, datetime, str], None]  # (line, when, "kmsg" | "journal")
POLL_MS = 1000
READ_BYTES = 8192  # one /dev/kmsg record per read, at most this long


def booted_at() -> datetime:
    """Wall time of boot, as kmsg's clock counts from it (monotonic, like printk's)."""
    return datetime.now(UTC) - timedelta(seconds=time.monotonic())


class KernelLog:
    """One reader thread; `counts` says how many records and Xid lines it saw."""

    def __init__(self, on_line: OnLine, path: Path = Path("/dev/kmsg"),
                 lookback: timedelta = timedelta(minutes=10)) -> None:
        self.on_line = on_line
        self.path = path
        self.lookback = lookback
        self.stop = threading.Event()
        self.counts = {"records": 0, "nvrm": 0, "events": 0, "overwritten": 0}
        self.source: str | None = None  # what it reads, once started
        self.problem: str | None = None  # why it reads nothing, when it does not
        self._thread: threading.Thread | None = None

    def start(self) -> KernelLog:
        self._thread = threading.Thread(target=self._run, name="peerwatch-kernel-log",
                                        daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            journal = shutil.which("journalctl")
            if journal is None or self.path != Path("/dev/kmsg"):
                self._give_up(f"cannot read {self.path} ({exc.strerror}); Xid/SXid lines "
                              "come from NVML's events only (run as root or grant CAP_SYSLOG)")
                return
            self._follow_journal(journal)
            return
        self.source = "kmsg"
        try:
            self.read_kmsg(fd)
        finally:
            os.close(fd)

    def _give_up(self, why: str) -> None:
        self.problem = why
        log.warning("kernel log: %s", why)

    def read_kmsg(self, fd: int) -> None:
        """Read records until `stop`; the first pass (the existing buffer) keeps only the
        records within `lookback` of now."""
        boot = booted_at()
        since = timedelta(seconds=time.monotonic()) - self.lookback
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while not self.stop.is_set():
            try:
                raw = os.read(fd, READ_BYTES)
            except BlockingIOError:
                since = timedelta(0)  # the backlog is read: every later record is new
                poller.poll(POLL_MS)
                continue
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    self.counts["overwritten"] += 1
                    continue
                self._give_up(f"reading {self.path} failed ({exc.strerror})")
                return
            self._record(raw, boot, since)

    def _record(self, raw: bytes, boot: datetime, since: timedelta) -> None:
        record = parse_record(raw)
        if record is None:
            return
        self.counts["records"] += 1
        if "NVRM" in record.message:
            self.counts["nvrm"] += 1
        line = parse_line(record.message)
        if line is not None and record.since_boot >= since:
            self.counts["events"] += 1
            self.on_line(line, boot + record.since_boot, "kmsg")

    def _follow_journal(self, journal: str) -> None:
        """`journalctl -k -f -o json` from `lookback` ago: each message with its time."""
        self.source = "journal"
        since = (datetime.now(UTC) - self.lookback).strftime("%Y-%m-%d %H:%M:%S UTC")
        try:
            proc = subprocess.Popen([journal, "-k", "-f", "-o", "json", "--since", since],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError as exc:
            self._give_up(f"cannot run journalctl ({exc})")
            return
        assert proc.stdout is not None
        def stop_journal() -> None:
            self.stop.wait()
            proc.terminate()

        threading.Thread(target=stop_journal, daemon=True).start()
        for raw in proc.stdout:
            self._journal_entry(raw)
        proc.wait()

    def _journal_entry(self, raw: bytes) -> None:
        try:
            entry = json.loads(raw)
            message = entry.get("MESSAGE")
            at = datetime.fromtimestamp(int(entry["__REALTIME_TIMESTAMP"]) / 1e6, UTC)
        except (ValueError, KeyError, TypeError):
            return
        if not isinstance(message, str):
            return
        self.counts["records"] += 1
        self.counts["nvrm"] += "NVRM" in message
        line = parse_line(message)
        if line is not None:
            self.counts["events"] += 1
            self.on_line(line, at, "journal")
