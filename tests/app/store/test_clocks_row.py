"""A clocks sample stored as a list (migration 0033) reads back as the object it was, and
rows written before as objects read the same."""

from __future__ import annotations

import pytest

from peerwatch.app.store.clocks_row import CLOCK_FIELDS, clocks_of, packed_clocks
from peerwatch.probes.clocks import GpuClocks


def test_every_stored_field_has_a_place() -> None:
    assert set(CLOCK_FIELDS) == set(GpuClocks.model_fields) - {"gpu", "reasons"}


def test_a_list_reads_back_as_the_object_it_was() -> None:
    sample = GpuClocks(gpu=3, reasons=4, sm_clock_mhz=1980, power_mw=450_000,
                       power_limit_mw=700_000, temperature_c=61)
    values = sample.model_dump(mode="json", exclude={"gpu", "reasons"})
    stored = packed_clocks(values)
    assert stored == [None, 1980, None, 450_000, 700_000, 61]  # trailing nulls left out
    assert clocks_of(stored) == values
    assert GpuClocks(gpu=3, reasons=4, **(clocks_of(stored) or {})) == sample


def test_an_object_written_before_reads_the_same() -> None:
    values = GpuClocks(gpu=0, temperature_c=40).model_dump(mode="json",
                                                           exclude={"gpu", "reasons"})
    assert clocks_of(values) == clocks_of(packed_clocks(values)) == values
    assert clocks_of(None) is None


def test_a_field_without_a_place_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="fan_pct"):
        packed_clocks({"fan_pct": 30})
