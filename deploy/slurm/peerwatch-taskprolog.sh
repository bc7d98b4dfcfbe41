#!/bin/sh
# Slurm TaskProlog: on jobs that ask for it, pick the best-connected GPUs through peerwatch.
#   sbatch --exclusive --export=ALL,PEERWATCH_PATTERN=ring,PEERWATCH_GPUS=4 job.sh
# Slurm reads `export NAME=value` lines printed here into the task's environment. Only for
# jobs that own the whole node (--exclusive): with shared nodes Slurm's own GPU binding wins.
# If peerwatch cannot answer, nothing is printed and the job runs on Slurm's default GPUs.
[ -n "${PEERWATCH_PATTERN:-}" ] && [ -n "${PEERWATCH_GPUS:-}" ] || exit 0
server="${PEERWATCH_URL:-http://127.0.0.1:8000}"
node="${SLURMD_NODENAME:-$(hostname -s)}"
url="$server/api/v1/scheduler/placement?host=$node&gpus=$PEERWATCH_GPUS&pattern=$PEERWATCH_PATTERN"
python3 - "$url" <<'PY' || exit 0
import json, sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        p = json.load(r)
except Exception as exc:  # no placement: leave Slurm's choice alone
    print(f"print peerwatch: no placement ({exc})")
    sys.exit(0)
print("export CUDA_DEVICE_ORDER=PCI_BUS_ID")
print(f"export CUDA_VISIBLE_DEVICES={p['cuda_visible_devices']}")
bw = p.get("predicted_bps")
print(f"print peerwatch: GPUs {p['cuda_visible_devices']}" + (f", predicted {bw / 1e9:.0f} GB/s" if bw else ""))
PY
