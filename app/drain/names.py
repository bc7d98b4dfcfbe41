"""Node names from the scheduler, checked by the rule every host name follows
(`probes.report.HOSTNAME_RULE`) before one reaches scontrol's arguments or a Kubernetes API
path: a node listed as `a/b`, or with a newline or a space in its name, is never acted on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from peerwatch.app.drain.facts import SchedNode
from peerwatch.probes.report import valid_hostname


class BadNodeName(RuntimeError):
    """A node name no host can have: the action is reported as failed, nothing is run."""


def checked(name: str) -> str:
    """`name` in the scheduler's own spelling when it follows the rule, else BadNodeName."""
    try:
        valid_hostname(name)
    except ValueError as exc:
        raise BadNodeName(f"node {exc}; not acted on") from None
    return name


def keep_valid(nodes: Iterable[SchedNode]) -> tuple[list[SchedNode], dict[str, str]]:
    """The nodes whose names follow the rule, and each other node's refusal, in words."""
    kept, refused = [], {}
    for node in nodes:
        try:
            kept.append(replace(node, name=checked(node.name)))
        except BadNodeName as exc:
            refused[node.name] = str(exc)
    return kept, refused
