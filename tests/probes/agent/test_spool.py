"""The spool on disk: atomic, oldest-first, bounded with counted drops, corrupt files aside."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from peerwatch.probes.agent.spool import CORRUPT_SUFFIX, REJECTED_SUFFIX, Spool, SpoolLocked
from tests.probes.sample_reports import sample_report


def test_reports_come_back_oldest_first_and_survive_a_restart(tmp_path: Path) -> None:
    reports = [sample_report(f"h{i}") for i in range(5)]
    with Spool(tmp_path, 1 << 20) as spool:
        for r in reports:
            spool.put(r)
    with Spool(tmp_path, 1 << 20) as reopened:
        loaded = [reopened.load(e) for e in reopened.entries()]
        assert [r.report_id for r in loaded if r] == [r.report_id for r in reports]
        reopened.put(sample_report("later"))  # numbering continues after the restart
        assert reopened.entries()[-1].name > reopened.entries()[-2].name


def test_names_sort_oldest_first_past_ten(tmp_path: Path) -> None:
    with Spool(tmp_path, 1 << 20) as spool:
        ids = [spool.put(sample_report(f"h{i}")) for i in range(12)]
        assert [e.name for e in spool.entries()] == sorted(e.name for e in ids if e)
        assert sorted(os.listdir(tmp_path)) == sorted([e.name for e in ids if e] + [".lock"])


def test_full_spool_drops_the_oldest_and_counts_them(tmp_path: Path) -> None:
    one = len(sample_report(padding=1000).model_dump_json())
    with Spool(tmp_path, max_bytes=3 * one + one // 2) as spool:
        reports = [sample_report(f"h{i}", padding=1000) for i in range(5)]
        for r in reports:
            spool.put(r)
        kept = [spool.load(e) for e in spool.entries()]
        assert [r.report_id for r in kept if r] == [r.report_id for r in reports[2:]]
        assert spool.size_bytes() <= spool.max_bytes
        assert spool.dropped() == 2
    with Spool(tmp_path, max_bytes=3 * one + one // 2) as reopened:  # the count is persisted
        assert reopened.dropped() == 2
        reopened.acknowledge_drops(2)
        assert reopened.dropped() == 0


def test_report_larger_than_the_spool_is_dropped_and_counted(tmp_path: Path) -> None:
    with Spool(tmp_path, max_bytes=500) as spool:
        assert spool.put(sample_report(padding=1000)) is None
        assert len(spool) == 0 and spool.dropped() == 1


def test_corrupt_file_is_set_aside_and_the_rest_still_load(tmp_path: Path, caplog) -> None:
    with Spool(tmp_path, 1 << 20) as spool:
        first, second, third = (spool.put(sample_report(f"h{i}")) for i in range(3))
        assert first and second and third
        (tmp_path / second.name).write_bytes(b'{"schema_version": 1, "kind": "swe')  # torn
        loaded = [spool.load(e) for e in spool.entries()]
        assert [r is None for r in loaded] == [False, True, False]
        assert (tmp_path / (second.name + CORRUPT_SUFFIX)).exists()
        assert [e.name for e in spool.entries()] == [first.name, third.name]
        assert spool.dropped() == 1
        assert "not a valid report" in caplog.text and second.name in caplog.text


def test_interrupted_write_leaves_no_entry(tmp_path: Path) -> None:
    (tmp_path / ".tmp-000000000001-00000000-0000-0000-0000-000000000000.json").write_text("{")
    with Spool(tmp_path, 1 << 20) as spool:
        assert len(spool) == 0
        assert not any(p.name.startswith(".tmp-") for p in tmp_path.iterdir())


def test_rejected_reports_are_kept_but_bounded(tmp_path: Path) -> None:
    with Spool(tmp_path, 1 << 20) as spool:
        for i in range(55):
            spool.set_aside_report(sample_report(f"h{i}"), REJECTED_SUFFIX)
        kept = spool.set_aside_files()
        assert len(kept) == 50 and spool.dropped() == 55
        assert kept[0].name.startswith("000000000006-")  # the five oldest were pruned


def test_second_owner_of_a_directory_is_refused(tmp_path: Path) -> None:
    with Spool(tmp_path, 1 << 20), pytest.raises(SpoolLocked, match="another probe"):
        Spool(tmp_path, 1 << 20)
    Spool(tmp_path, 1 << 20).close()  # released on close
