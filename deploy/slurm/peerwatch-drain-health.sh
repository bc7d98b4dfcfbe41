#!/bin/sh
# Slurm HealthCheckProgram (slurm.conf: HealthCheckProgram=/etc/slurm/peerwatch-drain-health.sh,
# HealthCheckInterval=300): one `peerwatch drain` round for this node with the drain policy
# (docs/drain.md): drains it with "peerwatch: <reason>" when the policy says so, resumes it
# when peerwatch's own drain is no longer needed, never touches anyone else's drain. Slurm
# kills a health check after 60 s: the round is bounded at PEERWATCH_HEALTH_TIMEOUT (default
# 50 s; HTTP 10 s per call). An unreachable server leaves the node alone; always exits 0.
# Settings (environment, or /etc/default/peerwatch): PEERWATCH_URL, PEERWATCH_GATE_TOKEN or
# PEERWATCH_GATE_TOKEN_FILE (default /etc/peerwatch/gate-token: this node's gate credential,
# `peerwatch token issue --gate NODE`, which acts on this node only), PEERWATCH_DRAIN_POLICY,
# PEERWATCH_BIN.
[ -r /etc/default/peerwatch ] && . /etc/default/peerwatch
gate_file="${PEERWATCH_GATE_TOKEN_FILE:-/etc/peerwatch/gate-token}"
if [ -z "${PEERWATCH_GATE_TOKEN:-}" ] && [ -r "$gate_file" ]; then
  PEERWATCH_GATE_TOKEN=$(cat "$gate_file")
  export PEERWATCH_GATE_TOKEN
fi
timeout "${PEERWATCH_HEALTH_TIMEOUT:-50}" "${PEERWATCH_BIN:-peerwatch}" drain --health-check \
  --server "${PEERWATCH_URL:-http://127.0.0.1:8000}" --node "${SLURMD_NODENAME:-$(hostname -s)}" \
  || echo "peerwatch-drain-health: no verdict this time (exit $?); node left alone" >&2
exit 0
