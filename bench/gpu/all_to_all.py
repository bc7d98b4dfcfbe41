"""All-to-all on this host's GPUs (a2a_ce, a2a_nccl): each GPU's figure against what its
topology should give, and the efficiency that figure implies.

Run it on a GPU host from the repository root:

    source bench/gpu/_env.sh; python3 bench/gpu/all_to_all.py

It runs the probe's own sweep (`build_report` on the real fabric, the default budgets of
probes/test_kinds.py) REPEATS times over every GPU, and for each GPU and test prints the
median figure, what the server expects of the topology (app/analysis/all_to_all.py, with the
declared, provisional efficiency), their ratio, and the efficiency measured (ratio x the
declared one): the number to put in the kind's `expect` row once measured. Reference: the
server's own expectation; there is no nvbandwidth figure for this host recorded in
../shared/REFERENCE.md. With fewer than two GPUs (the lent one-H200 machine) or none it prints
'skipped' and exits 0; NVLink multicast stays off (bench/gpu/_env.sh). Exit status 1 when a
run failed or its data did not verify, else 0.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REPEATS = 3


def main() -> int:
    try:
        from bench.helpers.gpu import real_fabric_or_skip
        from peerwatch.app.cli.bench_expect import Expectations
        from peerwatch.probes.report import TestName
        from peerwatch.probes.sweep import SweepOptions, build_report
        from peerwatch.probes.test_kinds import kind_of
    except ImportError as exc:
        print(f"skipped: the probe cannot be imported here ({exc}): carry its wheels "
              "(WHL=dir, see bench/gpu/_env.sh)")
        return 0
    fabric = real_fabric_or_skip()
    if fabric is None:
        return 0
    count = fabric.gpu_count()
    if count < 2:
        print(f"skipped: all-to-all needs two or more GPUs, this host has {count}")
        return 0
    tests = (TestName.A2A_CE, TestName.A2A_NCCL)
    options = SweepOptions(tests=tests, timeout_s=60.0, force=True)
    reports = [build_report(fabric, options=options) for _ in range(REPEATS + 1)][1:]
    judge = Expectations(reports[0].inventory)
    ok = True
    print(f"{'gpu':>3} {'test':<9} {'GB/s':>8} {'expected':>9} {'ratio':>6} {'eff':>5} "
          f"{'verified':>8} {'GPU ms':>7}")
    for test in tests:
        for gpu in range(count):
            runs = [r for rep in reports for r in rep.results
                    if r.test is test and r.src == gpu]
            failed = [r.error for r in runs if r.error]
            if failed or not runs:
                ok = False
                print(f"{gpu:>3} {test.value:<9} failed: {(failed or ['no result'])[0]}")
                continue
            value = statistics.median(r.value or 0.0 for r in runs)
            expect = judge.judge(runs[0]).expectation
            ratio = value / expect.value if expect else None
            declared = kind_of(test).expect.nvlink  # the NVLink efficiency
            eff = f"{ratio * declared:.2f}" if ratio and declared else "-"
            verified = all(r.verified for r in runs)
            ok = ok and verified
            print(f"{gpu:>3} {test.value:<9} {value / 1e9:>8.1f} "
                  f"{(expect.value / 1e9 if expect else float('nan')):>9.1f} "
                  f"{(ratio or float('nan')):>6.2f} {eff:>5} {str(verified):>8} "
                  f"{statistics.median(r.gpu_time_s for r in runs) * 1e3:>7.2f}")
    if reports and (basis := judge.judge(reports[0].results[0]).expectation):
        print(f"expected basis (GPU{reports[0].results[0].src}): {basis.basis}")
    return 0 if ok else 1


if __name__ == "__main__":
    from bench.helpers.cli import no_options

    no_options(__doc__, __file__)
    sys.exit(main())
