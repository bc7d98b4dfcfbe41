"""Snapshot files in, readable text out: what `peerwatch snapshot` prints for people.

`load_snapshot` turns every way a file can be wrong (missing, unreadable, not JSON, not a
snapshot, a newer schema) into one ValueError line naming the file, for exit status 2.
`summary` is the few lines an operator reads on a node: counts and what is not as it
should be, never the full per-link table (`--json` has that).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import ValidationError

from peerwatch.probes.report import LinkState
from peerwatch.probes.snapshot import SUPPORTED_SNAPSHOT_VERSIONS, Snapshot

COUNTERS = ("replay", "recovery", "crc_flit", "crc_data", "ecc_data")


def load_snapshot(path: Path) -> Snapshot:
    """The snapshot in `path`; ValueError with one line saying what is wrong with it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return Snapshot.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if first["type"] == "json_invalid":
            raise ValueError(f"{path} is not JSON: {first['msg']}") from None
        if first["loc"][:1] == ("schema_version",):
            raise ValueError(f"{path}: unsupported schema_version; this peerwatch reads "
                             f"{list(SUPPORTED_SNAPSHOT_VERSIONS)}") from None
        where = ".".join(map(str, first["loc"])) or "the document"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ValueError(f"{path} is not a peerwatch snapshot: {where}: "
                         f"{first['msg']}{more}") from None


def summary(snap: Snapshot) -> str:
    inv, host = snap.inventory, snap.host
    lines = [f"{host.hostname} ({host.fabric}), driver {host.driver_version or '?'}: "
             f"read in {snap.took_s * 1000:.0f} ms at {snap.taken_at:%Y-%m-%d %H:%M:%S} UTC"
             + (f", job {snap.job_id} {snap.phase.value}" if snap.job_id else "")]
    names = Counter(g.name for g in inv.gpus)
    lines.append(f"GPUs: {len(inv.gpus)} ("
                 + ", ".join(f"{n} x {name}" for name, n in names.items()) + ")")
    low = [f"GPU{g.index} Gen{g.pcie.gen_current} x{g.pcie.width_current} of "
           f"Gen{g.pcie.gen_max} x{g.pcie.width_max}" for g in inv.gpus
           if (g.pcie.gen_current, g.pcie.width_current) < (g.pcie.gen_max, g.pcie.width_max)]
    lines.append("PCIe: " + ("; ".join(low) + " (downtrained)" if low else "every GPU at its "
                             "maximum generation and width"))
    down = [f"GPU{p.gpu} link {p.link}" for p in inv.nvlinks if p.state is LinkState.DOWN]
    lines.append(f"NVLink: {len(inv.nvlinks)} ports, {len(inv.nvlinks) - len(down)} up"
                 + (f", down: {', '.join(down)}" if down else ""))
    totals = {c: sum(getattr(lc, c) or 0 for lc in snap.counters.links) for c in COUNTERS}
    lines.append("NVLink errors (lifetime): " + ", ".join(f"{k} {v}" for k, v in totals.items()))
    fabrics = Counter(f"{g.switch_fabric.state}/{g.switch_fabric.health or '-'}"
                      for g in inv.gpus if g.switch_fabric)
    if fabrics:
        lines.append("fabric (state/health): " + ", ".join(f"{k} on {n} GPU(s)"
                                                           for k, n in fabrics.items()))
    if inv.fabric_manager is not None:
        fm = inv.fabric_manager
        state = {True: "running", False: "not running", None: "unknown"}[fm.running]
        lines.append(f"Fabric Manager: {state}" + (f" ({fm.how})" if fm.how else ""))
    for err in snap.errors:
        lines.append(f"could not read {err.where}: {err.message}")
    return "\n".join(lines)
