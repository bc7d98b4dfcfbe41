#!/bin/sh
# Slurm Prolog (slurm.conf: Prolog=/etc/slurm/peerwatch-prolog.sh): this node's GPU fabric
# just before the job starts, sent to peerwatch; `GET /api/v1/hosts/NODE/jobs/JOB/diff`
# compares it with the epilog's. Never fails the job (see peerwatch-job-snapshot.sh).
exec "$(dirname "$0")/peerwatch-job-snapshot.sh" prolog
