#!/bin/sh
# Which job holds each GPU, for peerwatch's agent (and dcgm-exporter's
# --hpc-job-mapping-dir, which reads the same files): one file per GPU index in the mapping
# directory, holding the ids of the jobs on that GPU, one per line. Called by
# peerwatch-prolog.sh (`add`) and peerwatch-epilog.sh (`remove`), e.g.
#   peerwatch-job-mapping.sh add
# The GPUs are the job's as slurmd gives them to Prolog and Epilog: SLURM_JOB_GPUS (the
# node's GPU indices, e.g. "1,2"), else SLURM_STEP_GPUS, else CUDA_VISIBLE_DEVICES. They are
# Slurm's indices, the order of gres.conf's File= lines (/dev/nvidia0 ...); peerwatch reads
# them as NVML indices, which agree when gres.conf lists the devices in PCI bus order (as
# AutoDetect=nvml does). A GPU named by UUID or MIG name is not mapped (said on stderr).
# Never fails the job: always exits 0. Another job on the same GPU (shards, MPS) keeps its
# line; the files are rewritten under a lock (flock, where util-linux has it) by rename.
# Settings (environment, or /etc/default/peerwatch which is read if present):
#   PEERWATCH_JOB_MAPPING_DIR    the directory (default /run/peerwatch/job-mapping; the
#                                agent's --job-mapping-dir must name the same one)
action="${1:?usage: peerwatch-job-mapping.sh add|remove}"
[ -n "${SLURM_JOB_ID:-}" ] || exit 0
case "$SLURM_JOB_ID" in  # Slurm's job ids are numbers: one line of the file, one grep pattern
  *[!0-9]*)
    shown=$(printf '%s' "$SLURM_JOB_ID" | tr -c 'A-Za-z0-9_.+-' '?')
    echo "peerwatch: job id '$shown' is not a number; not mapped" >&2
    exit 0 ;;
esac
[ -r /etc/default/peerwatch ] && . /etc/default/peerwatch
dir="${PEERWATCH_JOB_MAPPING_DIR:-/run/peerwatch/job-mapping}"
gpus="${SLURM_JOB_GPUS:-${SLURM_STEP_GPUS:-${CUDA_VISIBLE_DEVICES:-}}}"
[ -n "$gpus" ] || exit 0
if ! mkdir -p "$dir" 2>/dev/null; then
  echo "peerwatch: cannot create the job mapping directory $dir" >&2
  exit 0
fi

rewrite() {  # $1: the GPU's file; keeps the other jobs' lines, adds or drops this job's
  others=$(grep -vxF -- "$SLURM_JOB_ID" "$1" 2>/dev/null)
  if [ "$action" = add ]; then
    { [ -n "$others" ] && printf '%s\n' "$others"; printf '%s\n' "$SLURM_JOB_ID"; } \
      > "$1.tmp.$$" && mv -f "$1.tmp.$$" "$1"
  elif [ -n "$others" ]; then
    printf '%s\n' "$others" > "$1.tmp.$$" && mv -f "$1.tmp.$$" "$1"
  else
    rm -f "$1"
  fi
}

for gpu in $(printf '%s' "$gpus" | tr ',' ' '); do
  case "$gpu" in
    '' | *[!0-9]*)
      echo "peerwatch: GPU '$gpu' of job $SLURM_JOB_ID is not an index; not mapped" >&2
      continue ;;
  esac
  (
    command -v flock >/dev/null 2>&1 && flock -w 10 9
    rewrite "$dir/$gpu"
  ) 9>"$dir/.lock" || echo "peerwatch: job $SLURM_JOB_ID on GPU $gpu not ${action}ed" >&2
done
exit 0
