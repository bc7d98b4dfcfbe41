"""An all-to-all placement answered from the measured all-to-all where there is one.

The probe runs the all-to-all over every GPU of the host at once (`a2a_nccl`, `a2a_ce`),
so its figures answer exactly the question "what does an all-to-all over these GPUs reach"
for that set: a set of all the GPUs it ran over gets the measured figure (the step moves at
its slowest GPU's pace) instead of the prediction from pair figures, and the answer says so
(`source`, `model`), with the prediction beside it for comparison. A smaller set is still
predicted from pairs (fewer peers share the links differently), and a warning says which set
was measured. The ring pattern never uses it.
"""

from __future__ import annotations

from dataclasses import replace

from peerwatch.app.analysis.placement_types import FabricView, Pattern, Placement


def _gpus(gpus: set[int] | tuple[int, ...]) -> str:
    return ",".join(map(str, sorted(gpus)))


def with_measured(view: FabricView, placement: Placement) -> Placement:
    """`placement` with its all-to-all figure measured where the chosen set is the one the
    probe ran over; else as predicted, saying what was measured."""
    if placement.pattern is not Pattern.ALL_TO_ALL or placement.k < 2 or not view.all_to_all:
        return placement
    ran, chosen = set(view.all_to_all), set(placement.gpus)
    test = view.all_to_all_test or "all-to-all"
    if chosen != ran:
        note = (f"all_to_all predicted from pair figures: the measured {test} ran over GPUs "
                f"{_gpus(ran)}, not this set of {placement.k}")
        return replace(placement, warnings=(*placement.warnings, note))
    slowest = min(sorted(chosen), key=lambda g: view.all_to_all[g])
    value = view.all_to_all[slowest]
    was = (f"{placement.predicted_bps / 1e9:.1f} GB/s" if placement.predicted_bps is not None
           else "none")
    model = (f"measured: {test} over GPUs {_gpus(chosen)}, every GPU sending to every other "
             f"at once; the step moves at its slowest GPU's pace (GPU{slowest}, "
             f"{value / 1e9:.1f} GB/s per GPU); predicted from pair figures: {was}")
    return replace(placement, predicted_bps=value, source="measured", model=model)
