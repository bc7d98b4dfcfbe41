"""What a faulty NVSwitch's page stands for: the GPUs whose NVLinks went down with it
(their stored fabric verdict names kind `switch`, `analysis/switch_fold.py`), listed inside
the one `XidFault{switch}` page. `NVLinkDown` and `NVLinkWidthReduced` leave those GPUs out,
as their PromQL twins do (`unless on (host, gpu) peerwatch_gpu_fabric_problem{kind="switch"}`),
and `limited_capacity` is no fabric-not-ready page (kind `capacity`), so a lost switch is one
page on a board and, grouped by NVLink domain and switch in Alertmanager, on a rack.
"""

from __future__ import annotations

from peerwatch.app.alerting.context import HostContext
from peerwatch.app.analysis.domains import domain_key
from peerwatch.probes.report import LinkState

SWITCH_KIND = "switch"


def switch_folded(ctx: HostContext) -> set[int]:
    """GPUs whose down NVLinks a held NVSwitch fault explains: its page is theirs."""
    return {g.gpu for g in ctx.health.gpus if SWITCH_KIND in g.fabric}


def nvlink_domain(ctx: HostContext) -> str:
    """The NVLink domain a switch serves: the rack's cluster UUID (GB200 NVL72: every
    compute tray of the rack logs the lost switch tray), else the host (an HGX board's
    switches are its own). Alertmanager groups switch pages by it."""
    for info in ctx.fabric.gpus.values():
        fab = info.switch_fabric
        if fab is not None and (key := domain_key(fab.cluster_uuid)) is not None:
            return key
    return ctx.name


def switch_explains(ctx: HostContext) -> str:
    """The GPUs and links behind the switch, in words, and what the scheduler does."""
    gpus = sorted(switch_folded(ctx))
    if not gpus:
        return "the NVLink and pair alerts of the GPUs behind this switch"
    links = [(p.gpu, p.link) for g in gpus for p in ctx.fabric.links_of(g)
             if p.state is not LinkState.UP]
    by_gpu = {g: [k for gg, k in links if gg == g] for g in gpus}
    listed = "; ".join(f"GPU{g} NVLinks {', '.join(map(str, ks))}" for g, ks in by_gpu.items())
    cut = [g for g in gpus if all(p.state is not LinkState.UP for p in ctx.fabric.links_of(g))]
    offer = ("the scheduler still offers them at reduced bandwidth" if not cut else
             f"the scheduler leaves out {', '.join(f'GPU{g}' for g in cut)} (cut off) and "
             "offers the rest at reduced bandwidth")
    return (f"{len(links)} NVLinks down on {len(gpus)} GPUs ({listed}) and their reduced "
            f"width (NVLinkDown, NVLinkWidthReduced are not raised for them); {offer}")
