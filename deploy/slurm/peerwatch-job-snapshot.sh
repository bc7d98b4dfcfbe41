#!/bin/sh
# Take a job snapshot of this node's GPU fabric and send it to peerwatch; shared by
# peerwatch-prolog.sh and peerwatch-epilog.sh (Slurm passes hooks no arguments), e.g.
#   peerwatch-job-snapshot.sh prolog
# Never fails the job: a Prolog that exits non-zero drains the node, so this always exits 0.
# Quick: NVML only, no transfers (well under a second on 8 GPUs), a 5 s HTTP timeout, the
# whole command bounded by PEERWATCH_SNAPSHOT_TIMEOUT. Nothing lost: a snapshot the server
# does not take is spooled, and the next call (this job's epilog, the next job's prolog, or
# `peerwatch snapshot --post URL --spool DIR --flush` from a timer) delivers it.
# Settings (environment, or /etc/default/peerwatch which is read if present):
#   PEERWATCH_URL                server (default http://127.0.0.1:8000)
#   PEERWATCH_TOKEN_FILE         file holding this node's probe credential (default
#                                /etc/peerwatch/probe-token, the probe agent's)
#   PEERWATCH_SNAPSHOT_SPOOL     spool directory (default /var/spool/peerwatch/snapshots)
#   PEERWATCH_BIN                the peerwatch command (default: peerwatch on PATH)
#   PEERWATCH_FABRIC             nvml (default), or simulated:<preset> for tests
#   PEERWATCH_HOSTNAME           host name of a simulated fabric (default: the preset's)
#   PEERWATCH_SNAPSHOT_TIMEOUT   seconds for the whole command (default 30)
phase="${1:?usage: peerwatch-job-snapshot.sh prolog|epilog}"
[ -n "${SLURM_JOB_ID:-}" ] || exit 0
[ -r /etc/default/peerwatch ] && . /etc/default/peerwatch
token_file="${PEERWATCH_TOKEN_FILE:-/etc/peerwatch/probe-token}"
if [ -z "${PEERWATCH_PROBE_TOKEN:-}" ] && [ -r "$token_file" ]; then
  PEERWATCH_PROBE_TOKEN=$(cat "$token_file")
  export PEERWATCH_PROBE_TOKEN
fi
timeout "${PEERWATCH_SNAPSHOT_TIMEOUT:-30}" "${PEERWATCH_BIN:-peerwatch}" snapshot \
  --fabric "${PEERWATCH_FABRIC:-nvml}" ${PEERWATCH_HOSTNAME:+--hostname "$PEERWATCH_HOSTNAME"} \
  --post "${PEERWATCH_URL:-http://127.0.0.1:8000}" --job-id "$SLURM_JOB_ID" --phase "$phase" \
  --spool "${PEERWATCH_SNAPSHOT_SPOOL:-/var/spool/peerwatch/snapshots}" \
  || echo "peerwatch: no $phase snapshot of job $SLURM_JOB_ID (exit $?)" >&2
exit 0
