#!/usr/bin/env bash
# End to end on a GPU host (the lent 2 x H200): `peerwatch serve` + `peerwatch probe --once`
# on the real fabric, a contended sweep beside a second copying process, then every API answer
# that matters, /metrics, placement vs the measured all-reduce, and `serve`'s own local probe.
# Run from the repository root:  WHL=../.whl bash bench/gpu/e2e.sh
# Logs come back as $OUT/e2e-logs.tgz, the SQLite database as $OUT/h200x2.db (for dashboard screenshots of real data).
set -uo pipefail
source "$(dirname "$0")/_env.sh"
RESULTS=${OUT:-/tmp/peerwatch-e2e}; mkdir -p "$RESULTS"
OUT=/tmp/pw-e2e-logs; rm -rf "$OUT"; mkdir -p "$OUT"   # many files: tarred into $RESULTS
python3 -c "import fastapi, sqlalchemy, alembic.command, uvicorn, pydantic_settings, peerwatch.app.main, peerwatch.app.cli" \
  || { echo "missing Python packages: carry them as wheels (WHL=...)"; exit 1; }
DB=/tmp/pw-e2e/peerwatch.db; rm -rf /tmp/pw-e2e; mkdir -p /tmp/pw-e2e
export PEERWATCH_DATABASE_URL="sqlite:///$DB" PEERWATCH_DATA_DIR=/tmp/pw-e2e
export PEERWATCH_ADMIN_TOKEN=e2e-admin
HN=$(hostname -s | tr 'A-Z' 'a-z')   # the host the probe reports as, with its own credential
API=http://127.0.0.1:8000
pw() { python3 -m peerwatch.app.cli "$@"; }
get() { python3 -c "import sys,urllib.request as u; sys.stdout.write(u.urlopen(sys.argv[1], timeout=30).read().decode())" "$1"; }
FABRIC=${FABRIC:-auto}   # FABRIC=simulated:h200x2 tries this script without GPUs

python3 -m peerwatch.app.cli serve --no-local-probe --port 8000 --log-level warning >"$OUT/serve.log" 2>&1 &
SERVE=$!
for _ in $(seq 60); do get "$API/healthz" >/dev/null 2>&1 && break; sleep 0.5; done
PEERWATCH_PROBE_TOKEN=$(pw token issue --host "$HN"); export PEERWATCH_PROBE_TOKEN
probe() { pw probe --server "$API" --hostname "$HN" --fabric "$FABRIC" --spool-dir /tmp/pw-e2e/spool "$@"; }
for i in 1 2 3; do probe --once >"$OUT/probe-$i.log" 2>&1; echo "probe $i exit $?" >>"$OUT/probe-$i.log"; done
python3 -m bench.probe_contention --load 0 1 25 >"$OUT/load.log" 2>&1 &
LOAD=$!; sleep 4
probe --once --force >"$OUT/probe-contended.log" 2>&1; echo "exit $?" >>"$OUT/probe-contended.log"
wait $LOAD
H=$(get "$API/api/v1/hosts" | python3 -c "import json,sys; print(json.load(sys.stdin)['hosts'][0]['host'])")
# A job's prolog and epilog snapshots through the server, as deploy/slurm's hooks post them.
for phase in prolog epilog; do
  pw snapshot --fabric "$FABRIC" --hostname "$HN" --post "$API" --job-id e2e-1 --phase $phase \
    --spool /tmp/pw-e2e/snapshots >"$OUT/snapshot-$phase.log" 2>&1
  echo "snapshot $phase exit $?" >>"$OUT/snapshot-$phase.log"
done
get "$API/api/v1/hosts/$H/jobs/e2e-1/diff" >"$OUT/api_job_diff.json" 2>&1
for path in hosts "hosts/$H" "hosts/$H/matrix?test=ce_write" "hosts/$H/health" "hosts/$H/topology" \
    "scheduler/placement?host=$H&gpus=2&pattern=ring" "alerts?state=firing"; do
  name=$(echo "$path" | tr '/?=&' '____'); get "$API/api/v1/$path" >"$OUT/api_$name.json" 2>&1
done
get "$API/metrics" >"$OUT/metrics.txt"
kill $SERVE; wait $SERVE 2>/dev/null
python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))" "$DB" "$RESULTS/h200x2.db"
# `serve` on a GPU host also probes the host itself.
rm -f "$DB"*; PEERWATCH_PROBE_SWEEP_JITTER_S=5 python3 -m peerwatch.app.cli serve --port 8000 --log-level warning >"$OUT/serve-local.log" 2>&1 &
SERVE=$!
for _ in $(seq 90); do  # two ce_write pairs, or (one GPU) its per-GPU tests
  n=$(get "$API/api/v1/hosts/$H/matrix?test=ce_write" 2>/dev/null | grep -o '"value":[0-9.e+]*' | wc -l)
  g=$(get "$API/api/v1/hosts/$H/health" 2>/dev/null | grep -o '"test":"h2d"' | wc -l)
  [ "${n:-0}" -ge 2 ] || [ "${g:-0}" -ge 1 ] && break; sleep 1
done
echo "serve's local probe: $n ce_write pairs, $g GPUs with h2d after ${SECONDS}s of script" >>"$OUT/serve-local.log"
kill $SERVE; wait $SERVE 2>/dev/null
python3 - "$OUT" <<'PY'
import json, pathlib, re, sys
out = pathlib.Path(sys.argv[1])
def j(name):
    p = out / f"api_{name}.json"
    p = p if p.exists() else next(out.glob(f"api_{name}*.json"), None)
    try: return json.loads(p.read_text()) if p else None
    except ValueError: return None
for f in sorted(out.glob("probe-*.log")):
    t = f.read_text()
    cost = re.findall(r"(sweep GPU time [^\n]*|agent memory[^\n]*|exit \d+)", t)
    print(f.name, "|", " ; ".join(cost))
m = j("hosts") or {}
print("hosts:", [(h["host"], h["verdict"], h["gpus_healthy"], h["gpus_total"]) for h in m.get("hosts", [])])
for name in out.glob("api_hosts_*_matrix*.json"):
    try:
        cells = json.loads(name.read_text()).get("cells", [])
    except ValueError:  # a one-GPU host has no pair matrix (404)
        cells = []
    for c in cells:
        print("matrix", {k: c.get(k) for k in ("src", "dst", "value", "ratio", "verdict", "contended", "foreign_bytes")})
for g in (j("hosts_" + m["hosts"][0]["host"] + "_health") or {}).get("gpus", []) if m.get("hosts") else []:
    for t in g.get("tests", []):
        print("gpu test", g["gpu"], t["test"], round((t.get("value") or 0) / 1e9, 1), "GB/s",
              "ratio", t.get("ratio_expected"), t["verdict"], "|", t.get("expected_basis"))
for f in sorted(out.glob("snapshot-*.log")):
    print(f.name, "|", " ".join(f.read_text().split())[-160:])
d = j("job_diff")
if d is not None: print("job diff:", json.dumps(d)[:400])
p = j("scheduler_placement")
if p: print("placement k=2 ring:", p.get("gpus"), "predicted", round((p.get("predicted_bps") or 0) / 1e9, 1), "GB/s")
metrics = (out / "metrics.txt").read_text().splitlines()
print("metrics lines:", len([l for l in metrics if l and not l.startswith("#")]))
print([l for l in metrics if l.startswith(("peerwatch_host_verdict", "peerwatch_gpu_verdict"))][:4])
print(open(out / "serve-local.log").read().splitlines()[-1])
PY
tar czf "$RESULTS/e2e-logs.tgz" -C "$OUT" .
