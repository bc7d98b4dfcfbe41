"""What the per-GPU tests do on the CPU side, tested without a GPU: the CPU list NVML gives,
pinning the allocating thread to it and restoring it, and the verification pattern the CPU
writes (h2d) or checks (d2h), which must equal the device kernel's word for word (numpy
comes with CuPy; where it is absent that one test skips, and tests/gpu runs it on a GPU)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from peerwatch.probes.nvidia import kernels
from peerwatch.probes.nvidia.gpu_copies import on_cpus, pattern
from peerwatch.probes.topology import parse_cpulist

linux_only = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux affinity")


def test_cpu_lists_parse_as_nvml_prints_them() -> None:
    assert parse_cpulist("0-3,8,10-11") == frozenset({0, 1, 2, 3, 8, 10, 11})
    assert parse_cpulist("5") == frozenset({5})
    assert parse_cpulist(None) == parse_cpulist("") == parse_cpulist("0-x") == frozenset()


@linux_only
def test_the_thread_runs_on_the_gpus_cpus_and_gets_its_own_back() -> None:
    before = os.sched_getaffinity(0)
    one = min(before)
    with on_cpus(frozenset({one, 10_000})) as pinned:  # 10000: not ours, left out
        assert pinned and os.sched_getaffinity(0) == {one}
    assert os.sched_getaffinity(0) == before


@linux_only
def test_cpus_the_process_may_not_use_leave_it_unpinned() -> None:
    before = os.sched_getaffinity(0)
    with on_cpus(frozenset({10_000})) as pinned:
        assert not pinned and os.sched_getaffinity(0) == before
    with on_cpus(frozenset()) as pinned:
        assert not pinned


def test_the_cpu_pattern_is_the_kernels_word_for_word() -> None:
    import numpy  # comes with CuPy where the probe runs; a dev dependency here
    seed = 0x5EED1
    words = pattern(SimpleNamespace(np=numpy), 4 * 1000, seed)  # type: ignore[arg-type]
    want = [((i * kernels.PATTERN_MULT) & 0xFFFFFFFF) ^ seed for i in range(1000)]
    assert words.dtype == numpy.uint32 and words.tolist() == want
    assert f"{kernels.PATTERN_MULT}ull" in kernels.SOURCE  # pw_fill/pw_check use the same
