"""The recording rules of the network twins: triangulation (app/analysis/triangulate.py) in
PromQL over the server's pair verdicts, `peerwatch_host_pair_slow` (1 slow, 0 healthy; one
series per direction of each judged host pair, and per spine group it crosses, `via_spine`
empty under one leaf; `first` is "true" on the direction whose host sorts first).

Counting both directions: a host's series are its partners; a spine's are twice its pairs.
"""

from __future__ import annotations

from peerwatch.app.alerting.promql import Record

PAIR = "peerwatch:network_pair_slow"
VIA = "peerwatch:network_pair_slow_via_spine"
SPINE = "peerwatch:network_spine_fault"
CANDIDATE = "peerwatch:network_host_slow_with_all"
LEAF = "peerwatch:network_leaf_fault"
AS_PEER_LEAF = f'label_replace({LEAF}, "peer_leaf", "$1", "leaf", "(.*)")'

NETWORK_RECORDS: tuple[Record, ...] = (
    Record(PAIR, expr="max by (host, leaf, peer_host, peer_leaf) (peerwatch_host_pair_slow)",
           comment="Each direction of each judged host pair: 1 when slow in any test "
                   "(several server replicas: max)."),
    Record(VIA, expr=('max by (host, peer_host, via_spine) '
                      '(peerwatch_host_pair_slow{via_spine!=""})'),
           comment="The same, per spine group a pair crosses."),
    Record(SPINE, expr=(
        f"(count by (via_spine) ({VIA} == 1) == count by (via_spine) ({VIA})) >= 4\n"
        f"and on (via_spine) (\n"
        f"  max by (via_spine) (count by (via_spine, host) ({VIA})) * 2\n"
        f"  < count by (via_spine) ({VIA})\n"
        ")\n"),
        comment="A spine group every tested crossing pair of which is slow (at least two "
                "pairs: four directions), with no host in all of them."),
    Record(CANDIDATE, expr=(
        f"(count by (host, leaf) ({PAIR} == 1) == count by (host, leaf) ({PAIR})) >= 2\n"),
        comment="A host slow with every partner (at least two)."),
    Record(LEAF, expr=(
        f"(count by (leaf) ({CANDIDATE}) == count by (leaf) (count by (host, leaf) ({PAIR})))"
        " >= 2\n"),
        comment="A leaf every tested host of which (at least two) is slow with every partner."),
)

HOST_EXPR = (
    f"{CANDIDATE}\n"
    f"unless on (leaf) {LEAF}\n"
    "and on (host) count by (host) (\n"
    f"    {PAIR}\n"
    f"  unless on (host, peer_host) ({VIA} and on (via_spine) {SPINE})\n"
    f"  unless on (peer_leaf) {AS_PEER_LEAF}\n"
    ")\n"
)

LEAF_EXPR = f'label_replace({LEAF}, "switch", "$1", "leaf", "(.*)")'
SPINE_EXPR = f'label_replace({SPINE}, "switch", "$1", "via_spine", "(.*)")'


def _as_peer(expr: str) -> str:
    return f'label_replace({expr}, "peer_host", "$1", "host", "(.*)")'


ONE_PARTNER = f"(count by (host) ({PAIR}) < 2)"
PATH_EXPR = (
    "max by (host, leaf, peer_host, peer_leaf) (peerwatch_host_pair_slow{first=\"true\"}) == 1\n"
    f"unless on (host, peer_host) ({VIA} and on (via_spine) {SPINE})\n"
    f"unless on (leaf) {LEAF}\n"
    f"unless on (peer_leaf) {AS_PEER_LEAF}\n"
    f"unless on (host) {CANDIDATE}\n"
    f"unless on (peer_host) {_as_peer(CANDIDATE)}\n"
    f"unless on (host) {ONE_PARTNER}\n"
    f"unless on (peer_host) {_as_peer(ONE_PARTNER)}\n"
)
