"""A bad spool never stops the agent: read-only or not a directory gives a
send-only agent with a warning; a full disk leaves no partial file and counts the report.

Full and read-only file systems are real ones: a 64 KiB tmpfs and a read-only tmpfs,
mounted for the test (root can; elsewhere these tests skip, naming why).
"""

from __future__ import annotations

import logging
import random
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from peerwatch.probes.agent.outbox import Delivery, Outbox
from peerwatch.probes.agent.sender import Backoff, Sender
from peerwatch.probes.agent.spool import SendOnlySpool, Spool, open_spool
from tests.probes.fakeclock import FakeClock
from tests.probes.live_server import TOKEN, free_port, live_server, server_settings, stored
from tests.probes.sample_reports import sample_report


@contextmanager
def tmpfs(path: Path, options: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=False)


def _outbox(spool: Spool | SendOnlySpool, url: str) -> Outbox:
    return Outbox(Sender(url, TOKEN, 5.0), spool, Backoff(5, 300, random.Random(1)),
                  FakeClock())


def test_full_disk_leaves_no_partial_file_and_counts_the_report(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "size=64k") as disk, Spool(disk, 1 << 20) as spool:
        big = sample_report("big", padding=2000)
        outbox = _outbox(spool, f"http://127.0.0.1:{free_port()}")  # nobody listens
        deliveries = [outbox.submit(big.model_copy(update={"report_id": uuid.uuid4()}))
                      .delivery for _ in range(40)]
        assert Delivery.LOST in deliveries  # the disk filled up
        leftovers = [p.name for p in disk.iterdir() if p.name.startswith(".tmp-")]
        assert leftovers == []
        lost = deliveries.count(Delivery.LOST)
        assert spool.dropped() == lost and len(spool) + lost == 40


def test_read_only_spool_starts_send_only_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = server_settings(tmp_path / "server")
    port = free_port()
    with tmpfs(tmp_path / "ro", "ro,size=64k") as disk:
        with caplog.at_level(logging.WARNING, "peerwatch.probes.agent.spool"):
            spool = open_spool(disk / "spool", 1 << 20)
        assert isinstance(spool, SendOnlySpool)
        assert "SEND-ONLY" in caplog.text and "Read-only file system" in caplog.text
        with live_server(settings, port=port):
            outbox = _outbox(spool, f"http://127.0.0.1:{port}")
            sent = sample_report("ro-host")
            assert outbox.submit(sent).delivery is Delivery.DELIVERED
        assert stored(settings).report_ids == [sent.report_id]
        down = _outbox(spool, f"http://127.0.0.1:{free_port()}")
        assert down.submit(sample_report("ro-host")).delivery is Delivery.LOST
        assert spool.dropped() == 1  # announced in the next report that gets through


def test_spool_path_that_is_a_file_starts_send_only(tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "spool").write_text("not a directory")
    with caplog.at_level(logging.WARNING, "peerwatch.probes.agent.spool"):
        spool = open_spool(tmp_path / "spool", 1 << 20)
    assert isinstance(spool, SendOnlySpool) and "SEND-ONLY" in caplog.text
    assert "not a directory" in caplog.text
