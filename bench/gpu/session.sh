#!/usr/bin/env bash
# One call on a GPU host (the lent 2 x H200): install carried wheels, run tests/gpu and the CPU
# probe tests, the tuning scan (TUNE=1), the accuracy bench, the contention run and
# `peerwatch bench --fabric nvml`; logs go to
# $OUT, a short table comes last. Usage, from the repository root on the device:
#   WHL=../.whl TUNE=1 bash bench/gpu/session.sh
set -uo pipefail
source "$(dirname "$0")/_env.sh"
OUT=${OUT:-/tmp/peerwatch-gpu}
mkdir -p "$OUT"
{ nvidia-smi topo -m; nvidia-smi --query-gpu=index,name,pci.bus_id,memory.used --format=csv;
  python3 -c 'import cupy, pynvml; print("cupy", cupy.__version__)'; } >"$OUT/machine.log" 2>&1
python3 -m pytest -q -p no:cacheprovider tests/gpu tests/probes -ra >"$OUT/pytest.log" 2>&1
echo "pytest exit $?" >>"$OUT/pytest.log"
if [ "${TUNE:-0}" = 1 ]; then
  timeout 240 python3 -m bench.gpu._probe_budgets ${TUNE_ONLY:+--only $TUNE_ONLY} \
    >"$OUT/budgets.log" 2>&1
fi
timeout 120 python3 -m bench.probe_accuracy >"$OUT/accuracy.log" 2>&1
echo "accuracy exit $?" >>"$OUT/accuracy.log"
timeout 120 python3 -m bench.probe_contention >"$OUT/contention.log" 2>&1
echo "contention exit $?" >>"$OUT/contention.log"
timeout 120 python3 -m peerwatch.app.cli bench --fabric nvml >"$OUT/cli.log" 2>&1
echo "cli exit $?" >>"$OUT/cli.log"
echo "== machine";    cat "$OUT/machine.log"
echo "== pytest";     tail -n 25 "$OUT/pytest.log"
[ -f "$OUT/budgets.log" ] && { echo "== budgets"; cat "$OUT/budgets.log"; }
echo "== peerwatch bench --fabric nvml"; tail -n 22 "$OUT/cli.log"
echo "== contention"; tail -n 12 "$OUT/contention.log"
echo "== accuracy";   tail -n 25 "$OUT/accuracy.log"
