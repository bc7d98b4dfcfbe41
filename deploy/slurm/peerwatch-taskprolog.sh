#!/bin/sh
# Slurm TaskProlog: on jobs that ask for it, pick the best-connected GPUs through peerwatch.
#   sbatch --exclusive --export=ALL,PEERWATCH_PATTERN=ring,PEERWATCH_GPUS=4 job.sh
# Slurm reads `export NAME=value` lines printed here into the task's environment. Only for
# jobs that own the whole node (--exclusive): with shared nodes Slurm's own GPU binding wins.
# If peerwatch cannot answer, nothing is exported and the job runs on Slurm's default GPUs.
# What the server answers never steers the job beyond its GPUs: only CUDA_DEVICE_ORDER and
# CUDA_VISIBLE_DEVICES are ever exported, each value checked in full against its form
# (digits and commas); an answer that breaks it exports nothing, says why on stderr, and
# the job keeps Slurm's GPUs. Standard library only (python3), as on any Slurm node.
[ -n "${PEERWATCH_PATTERN:-}" ] && [ -n "${PEERWATCH_GPUS:-}" ] || exit 0
python3 - "${PEERWATCH_URL:-http://127.0.0.1:8000}" "${SLURMD_NODENAME:-$(hostname -s)}" \
  "$PEERWATCH_GPUS" "$PEERWATCH_PATTERN" <<'PY' || exit 0
import json, math, re, sys, urllib.parse, urllib.request

# The only names written, and the whole of what each value may be.
EXPORTS = {"CUDA_DEVICE_ORDER": re.compile(r"PCI_BUS_ID"),
           "CUDA_VISIBLE_DEVICES": re.compile(r"[0-9]{1,2}(?:,[0-9]{1,2}){0,63}")}
MAX_ANSWER = 1 << 20  # a placement is a few kB
server, node, gpus, pattern = sys.argv[1:5]


def one_line(value, limit=200):
    """Printable text on one line: nothing the server says starts a line of its own."""
    text = " ".join(str(value).split())
    return "".join(c if c.isprintable() else "?" for c in text)[:limit]


def say(text):  # to the job's output (Slurm's `print`)
    print("print peerwatch: " + one_line(text))


def warn(text):
    print("peerwatch-taskprolog: " + one_line(text, 300), file=sys.stderr)


def export(name, value):
    """`export NAME=value` for a known name and a value of its form, else None (said why)."""
    rule = EXPORTS.get(name)
    if rule is None or not isinstance(value, str) or not rule.fullmatch(value):
        warn(f"dropped {name}={ascii(value)[:80]}: not a known name with a value of its form")
        return None
    return f"export {name}={value}"


def fetch():
    query = urllib.parse.urlencode({"host": node, "gpus": gpus, "pattern": pattern})
    url = f"{server.rstrip('/')}/api/v1/scheduler/placement?{query}"
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = answer.read(MAX_ANSWER + 1)
    if len(body) > MAX_ANSWER:
        raise ValueError(f"answer over {MAX_ANSWER} bytes")
    placed = json.loads(body)
    if not isinstance(placed, dict):
        raise ValueError("answer is not a JSON object")
    return placed


def same_gpus(devices):
    """As many distinct GPUs as asked for."""
    listed = devices.split(",")
    if len(set(listed)) != len(listed) or str(len(listed)) != gpus.strip():
        warn(f"dropped CUDA_VISIBLE_DEVICES={devices}: not {gpus.strip()} distinct GPUs")
        return False
    return True


def bandwidth(bps):
    ok = isinstance(bps, (int, float)) and not isinstance(bps, bool) and math.isfinite(bps)
    return f", predicted {bps / 1e9:.0f} GB/s" if ok and bps > 0 else ""


def main():
    try:
        placed = fetch()
    except Exception as exc:  # no placement: leave Slurm's choice alone
        say(f"no placement ({exc})")
        return
    devices = placed.get("cuda_visible_devices")
    lines = [export("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),
             export("CUDA_VISIBLE_DEVICES", devices)]
    if None in lines or not same_gpus(devices):
        say("the server's placement was refused; Slurm's GPUs kept")
        return
    print("\n".join(lines))
    say(f"GPUs {devices}{bandwidth(placed.get('predicted_bps'))}")


main()
PY
