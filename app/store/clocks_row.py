"""A gpu_samples row's clocks sample as stored: a JSON list in CLOCK_FIELDS' order, not an
object (migration 0033).

Every row of an 8-GPU host's readings repeated the nine field names (~150 of its ~340
bytes); a list of the values in a fixed order holds the same, trailing nulls left out.
Rows written before 0033 hold the object and read the same (`clocks_of` takes both). A
field added to `GpuClocks` goes at the end of CLOCK_FIELDS, never between: a stored list
reads by position.
"""

from __future__ import annotations

from typing import Any

# GpuClocks' fields as stored (its `gpu` and `reasons` have columns of their own)
CLOCK_FIELDS = ("reasons_supported", "sm_clock_mhz", "sm_clock_max_mhz", "power_mw",
                "power_limit_mw", "temperature_c", "slowdown_temperature_c",
                "violation_power_ns", "violation_thermal_ns")


def packed_clocks(values: dict[str, Any]) -> list[Any]:
    """`values` (GpuClocks' JSON without gpu and reasons) as stored: CLOCK_FIELDS' values in
    order, trailing nulls left out."""
    unknown = set(values) - set(CLOCK_FIELDS)
    if unknown:
        raise ValueError(f"clocks fields with no place in CLOCK_FIELDS: {sorted(unknown)}")
    out = [values.get(name) for name in CLOCK_FIELDS]
    while out and out[-1] is None:
        out.pop()
    return out


def clocks_of(stored: list[Any] | dict[str, Any] | None) -> dict[str, Any] | None:
    """A stored clocks sample as GpuClocks' fields (every one, None where unread): from the
    list (0033) or the object written before; None without a sample."""
    if stored is None:
        return None
    if isinstance(stored, dict):
        return {name: stored.get(name) for name in CLOCK_FIELDS} | stored
    return {name: stored[i] if i < len(stored) else None
            for i, name in enumerate(CLOCK_FIELDS)}
