"""The order every timed copy test runs in on a `Run`, written once (nvbandwidth's method).

Behind the hold (`Run.begin`) the test's buffers are prepared (filled, poisoned); every device
meets; the step is repeated `warmup` times untimed, then `copies` times in each of `samples`
timed windows; every device meets again; the results are checked on the device; `Run.end`
releases the hold and waits. Each kind of test (pair bandwidth, staged, h2d/d2h, local,
all-reduce) gives only its own parts. The latency test is not one of them: its timed step
differs per sample and it has no check on the device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.nvidia.transfer_run import Run, Window

Step = Callable[[], None]


class Timed(NamedTuple):
    windows: list[Window]  # one (start, stop) pair per sample
    gpu_s: float  # the GPU time of the whole test, from the hold to the end


def timed_copies(run: Run, spec: TestSpec, *, prepare: Step, step: Callable[[], Step],
                 check: Step) -> Timed:
    """Run one test: `prepare()` queues its fills, `step()` makes the repeated unit once the
    buffers are ready, `check()` queues its verification."""
    run.begin()
    prepare()
    run.barrier()
    one = step()
    run.repeat(one, spec.warmup)
    windows = [run.timed(one, spec.copies) for _ in range(spec.samples)]
    run.barrier()
    check()
    return Timed(windows, run.end())
