"""Two trees' dashboards served side by side, for bench/dashboard.py's before -> after.

The "before" tree is `git archive <ref>` (main, by default) unpacked in a temporary folder;
the "after" tree is this checkout. Each runs in a subprocess of its own with PYTHONPATH
pointing `peerwatch` at it (as bench/_pages_vs_main.py does): it seeds its own SQLite
database with `bench.dashboard.seed` *of that tree* (the same hosts: the seeding is the
same code on both sides) and serves it on a loopback port, printing the URL. Both servers
stay up while the bench alternates cold loads between them, so a machine whose load moves
(other jobs beside the bench) weighs on both figures alike.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEED_S = 1800.0  # generous: 200 hosts are judged one by one on a loaded machine

# Run with the tree as the working directory: `bench` and `peerwatch` are that tree's.
SERVE = """
import os, sys, tempfile
from pathlib import Path
os.environ["PEERWATCH_ALERT_EVAL_INTERVAL_S"] = "0"
from bench.dashboard import seed, serving
from peerwatch.app.runtime.config import Settings
with tempfile.TemporaryDirectory() as tmp:
    settings = Settings(data_dir=Path(tmp))
    seed(settings, int(sys.argv[1]))
    with serving(settings) as url:
        print("URL " + url, flush=True)
        try:
            sys.stdin.read()  # until the bench interrupts it
        except KeyboardInterrupt:
            pass
"""


def archive(ref: str, into: Path) -> Path | None:
    """`git archive ref` unpacked under `into`; None (with a line said) where this is no
    git checkout or `ref` is unknown."""
    tree = into / "tree"
    tree.mkdir()
    done = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True)
    if done.returncode != 0:
        print(f"before -> after skipped: git archive {ref} failed: "
              f"{done.stderr.decode(errors='replace').strip()[:200]}")
        return None
    subprocess.run(["tar", "-x", "-C", str(tree)], input=done.stdout, check=True)
    return tree


@contextmanager
def served(tree: Path, hosts: int) -> Iterator[str]:
    """`tree`'s app on `hosts` seeded hosts, in a subprocess: yields its URL."""
    with tempfile.TemporaryDirectory() as pkg:
        (Path(pkg) / "peerwatch").symlink_to(tree)
        env = {**os.environ, "PYTHONPATH": f"{pkg}:{tree}", "PYTHONWARNINGS": "ignore"}
        proc = subprocess.Popen([sys.executable, "-c", SERVE, str(hosts)], cwd=tree, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            url = _url_of(proc)
            yield url
        finally:
            _stop(proc)


def _stop(proc: subprocess.Popen, within_s: float = 120.0) -> None:
    """As Ctrl-C would (its temporary database is removed on the way out); killed if it has
    not ended within `within_s`."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=within_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


def _url_of(proc: subprocess.Popen) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("URL "):
            return line.split()[1]
    raise RuntimeError(f"the tree's server ended (exit {proc.wait()}) before it served")


@contextmanager
def before_and_after(ref: str, hosts: int) -> Iterator[dict[str, str] | None]:
    """{"before": url, "after": url}, or None where `ref` cannot be archived."""
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        old = archive(ref, Path(tmp))
        if old is None:
            yield None
            return
        yield {"before": stack.enter_context(served(old, hosts)),
               "after": stack.enter_context(served(ROOT, hosts))}
