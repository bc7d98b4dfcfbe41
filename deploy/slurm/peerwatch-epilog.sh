#!/bin/sh
# Slurm Epilog (slurm.conf: Epilog=/etc/slurm/peerwatch-epilog.sh): this node's GPU fabric
# just after the job ended, sent to peerwatch; it also delivers snapshots spooled while the
# server was away. It first removes the job from the GPU job mapping the prolog wrote
# (peerwatch-job-mapping.sh). Never fails the job (see peerwatch-job-snapshot.sh).
"$(dirname "$0")/peerwatch-job-mapping.sh" remove
exec "$(dirname "$0")/peerwatch-job-snapshot.sh" epilog
