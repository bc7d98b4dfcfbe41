#!/bin/sh
# Slurm Prolog (slurm.conf: Prolog=/etc/slurm/peerwatch-prolog.sh): this node's GPU fabric
# just before the job starts, sent to peerwatch (`GET /api/v1/hosts/NODE/jobs/JOB/diff`
# compares it with the epilog's); then, with PEERWATCH_GATE=1, the gate: may this node take
# the job? `peerwatch drain --gate` answers with the drain policy (docs/drain.md):
#   0   keep: the job runs
#   10  refuse: a GPU of this node is missing or down now (no debounce; also while the
#       breaker is open), or peerwatch took the node out (policy mode: act only). The gate
#       drained the node with peerwatch's reason and action and wrote why into the job's
#       AdminComment (`scontrol show job`, `sacct -o AdminComment`); this prolog exits 1, so
#       Slurm does not start the job here. A batch job is requeued held
#       (launch_failed_requeued_held: `scontrol release JOBID`), or requeued to run elsewhere
#       with SchedulerParameters=nohold_on_prolog_fail; an srun job is cancelled
#   75  could not judge (server unreachable or slow, node unknown): the job runs
# Anything else (the command missing, killed by PEERWATCH_GATE_TIMEOUT) also lets the job
# run: a monitoring outage never blocks a job. The snapshot never fails the job either.
# First of all it writes which job holds which GPU (peerwatch-job-mapping.sh: the agent's
# series and verdicts then name the job; the epilog removes it).
# Settings (environment, or /etc/default/peerwatch which is read if present), besides those
# of peerwatch-job-snapshot.sh and peerwatch-job-mapping.sh:
#   PEERWATCH_GATE               1 to ask the gate (default: 0, snapshot only)
#   PEERWATCH_GATE_TOKEN_FILE    file holding this node's gate credential (`peerwatch token
#                                issue --gate NODE`: acts on this node only; default
#                                /etc/peerwatch/gate-token)
#   PEERWATCH_DRAIN_POLICY       the drain policy file (default: built-in, observe mode)
#   PEERWATCH_GATE_TIMEOUT       seconds for the gate (default 30)
"$(dirname "$0")/peerwatch-job-mapping.sh" add
"$(dirname "$0")/peerwatch-job-snapshot.sh" prolog
[ -r /etc/default/peerwatch ] && . /etc/default/peerwatch
[ "${PEERWATCH_GATE:-0}" = 1 ] && [ -n "${SLURM_JOB_ID:-}" ] || exit 0
gate_file="${PEERWATCH_GATE_TOKEN_FILE:-/etc/peerwatch/gate-token}"
if [ -z "${PEERWATCH_GATE_TOKEN:-}" ] && [ -r "$gate_file" ]; then
  PEERWATCH_GATE_TOKEN=$(cat "$gate_file")
  export PEERWATCH_GATE_TOKEN
fi
timeout "${PEERWATCH_GATE_TIMEOUT:-30}" "${PEERWATCH_BIN:-peerwatch}" drain --gate \
  --server "${PEERWATCH_URL:-http://127.0.0.1:8000}" --node "${SLURMD_NODENAME:-$(hostname -s)}"
rc=$?
if [ "$rc" -eq 10 ]; then
  echo "peerwatch: job $SLURM_JOB_ID not started here (its AdminComment says why)" >&2
  exit 1
fi
[ "$rc" -eq 0 ] || echo "peerwatch: gate could not judge (exit $rc); job runs" >&2
exit 0
