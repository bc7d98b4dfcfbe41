// Unknown is never green. When a host has stopped reporting, what the API last judged is
// history, not the present: every object (GPU, link, pair, topology node and edge) is shown
// "unknown" (grey, "?") with its reason saying what it was when last known, and when.
//
//   staleHealth(health, at)   -> the same shape, verdicts "unknown", reasons "last known at …"
//   staleTopology(topo, at)   -> likewise for nodes and edges
//   staleMatrix(matrix)       -> each cell "last known at <its own measured_at>"

import * as fmt from "./format.js";

/** "last known at 2026-12-01 04:12:00Z: healthy — GPU3: 18/18 NVLinks up". */
export function lastKnown(at, verdict, reason) {
  return `last known at ${fmt.time(at)}: ${verdict}${reason ? ` — ${reason}` : ""}`;
}

function greyed(item, at) {
  return { ...item, verdict: "unknown", last_verdict: item.verdict,
    reason: lastKnown(at, item.verdict, item.reason) };
}

export function staleHealth(health, at) {
  if (!health) return health;
  return { ...health, // the host's own verdict is already "unknown: no report for …"
    gpus: health.gpus.map((g) => ({ ...greyed(g, at), tests: (g.tests || []).map((t) => greyed(t, at)) })),
    links: health.links.map((l) => greyed(l, at)),
    pairs: health.pairs.map((p) => ({ ...greyed(p, at), tests: p.tests.map((t) => greyed(t, at)) })) };
}

export function staleTopology(topo, at) {
  return { ...topo, nodes: topo.nodes.map((n) => greyed(n, at)),
    edges: topo.edges.map((e) => greyed(e, at)) };
}

export function staleMatrix(matrix, at) {
  return { ...matrix, cells: matrix.cells.map((c) => greyed(c, c.measured_at || at)) };
}
