#!/usr/bin/env bash
# One call on a GPU host: the checks this session's changes need on real hardware.
#   fabric: what the probe reads of the GPU fabric (legacy call first; V only where it is safe)
#   one GPU: `peerwatch bench --gpus 0` says so in one line and shows what it can measure
#   pcie: the per-GPU tests (h2d, d2h, local) against nvbandwidth's method, ratio table last
#   snapshot: how long `peerwatch snapshot` takes (bench/gpu/snapshot.py, budget 1 s)
#   events: NVML Xid events registered on every GPU, a wait that times out cleanly, and
#     /dev/kmsg read without error with its NVRM/Xid line counts (bench/gpu/events.py)
#   evidence: per GPU, clocks-event reasons decoded, clocks/power/temperature, violation
#     counters, and the GPUDirect RDMA readiness verdict with what it read (bench/gpu/evidence.py)
#   driver: per GPU the driver's own verdicts (recovery action, ECC, row remapping, retired
#     pages, PCIe AER of the GPU and its bridge) and IMEX, each a value or "not supported";
#     the raw answers go to $RESULTS/driver_health.json (bench/gpu/driver_health.py)
#   nics: this host's RDMA NICs recorded as a replayable sysfs fixture
#     ($RESULTS/sysfs_nics.json, bench/gpu/record_sysfs.py); skipped without RDMA NICs
#   gdr: GPUDirect RDMA measured per GPU through its nearest NIC (ib_write_bw --use_cuda
#     loopback, bench/gpu/gdr.py) against the NIC's line rate; skipped without NIC or perftest
#   all-to-all: a2a_ce and a2a_nccl per GPU against the topology's expectation and the
#     efficiency they imply (bench/gpu/all_to_all.py; skips on one GPU)
#   tests/gpu, then (E2E=1) bench/gpu/e2e.sh: serve + probe on the real fabric, stored verdicts
# Usage from the repository root:  WHL=.whl E2E=1 bash bench/gpu/checks.sh
set -uo pipefail
source "$(dirname "$0")/_env.sh"
RESULTS=${OUT:-/tmp/peerwatch-gpu}; mkdir -p "$RESULTS"
nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader >"$RESULTS/machine.log" 2>&1
timeout 120 python3 bench/gpu/fabric_check.py >"$RESULTS/fabric.log" 2>&1
echo "exit $?" >>"$RESULTS/fabric.log"
timeout 120 python3 -m peerwatch.app.cli bench --fabric nvml --gpus 0 >"$RESULTS/one-gpu.log" 2>&1
echo "exit $?" >>"$RESULTS/one-gpu.log"
timeout 200 python3 bench/gpu/pcie.py >"$RESULTS/pcie.log" 2>&1
echo "exit $?" >>"$RESULTS/pcie.log"
timeout 200 python3 bench/gpu/snapshot.py >"$RESULTS/snapshot.log" 2>&1
echo "exit $?" >>"$RESULTS/snapshot.log"
timeout 60 python3 bench/gpu/events.py >"$RESULTS/events.log" 2>&1
echo "exit $?" >>"$RESULTS/events.log"
timeout 60 python3 bench/gpu/evidence.py >"$RESULTS/evidence.log" 2>&1
echo "exit $?" >>"$RESULTS/evidence.log"
OUT=$RESULTS timeout 60 python3 bench/gpu/driver_health.py >"$RESULTS/driver.log" 2>&1
echo "exit $?" >>"$RESULTS/driver.log"
OUT=$RESULTS timeout 60 python3 bench/gpu/record_sysfs.py >"$RESULTS/nics.log" 2>&1
echo "exit $?" >>"$RESULTS/nics.log"
timeout 300 python3 bench/gpu/gdr.py >"$RESULTS/gdr.log" 2>&1
echo "exit $?" >>"$RESULTS/gdr.log"
timeout 200 python3 bench/gpu/all_to_all.py >"$RESULTS/all-to-all.log" 2>&1
echo "exit $?" >>"$RESULTS/all-to-all.log"
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu -ra >"$RESULTS/pytest.log" 2>&1
echo "exit $?" >>"$RESULTS/pytest.log"
if [ "${E2E:-0}" = 1 ]; then
  OUT=$RESULTS timeout 400 bash bench/gpu/e2e.sh >"$RESULTS/e2e.log" 2>&1
  echo "exit $?" >>"$RESULTS/e2e.log"
fi
for f in machine fabric one-gpu pcie snapshot events evidence driver nics gdr all-to-all pytest e2e; do
  [ -f "$RESULTS/$f.log" ] && { echo "== $f"; tail -n 30 "$RESULTS/$f.log"; }
done
