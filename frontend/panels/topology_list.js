// The host's topology as a list, for a phone's width (the graph needs ~600 px to read): one
// line per GPU, the ones at fault first (verdict, then scope: links down before a slow pair), each with its verdict (glyph and word), its reason,
// and its edges (NVLink NV# or PCIe level) with theirs. CSS shows it instead of the graph
// below 700 px; a screen reader reads the same facts at any width.

import { h } from "../shared/dom.js";
import { scopeOfText } from "../shared/scope.js";
import { badge, verdictOf } from "../shared/palette.js";

function edgeWords(e, other) {
  const what = e.kind === "nvlink"
    ? `NV${e.width ?? "?"}${e.links_total && e.links_total !== e.width ? `/${e.links_total}` : ""}`
    : e.path_level || (e.pcie_gen ? `PCIe Gen${e.pcie_gen} x${e.pcie_width ?? "?"}` : "PCIe");
  return `${what} to ${other}`;
}

function edgeItem(e, nodeId, names) {
  const other = names[e.source === nodeId ? e.target : e.source] || "?";
  const bad = e.verdict !== "healthy";
  return h("li", { class: bad ? "edge-bad" : null },
    bad ? h("span", { "aria-hidden": "true" }, `${verdictOf(e.verdict).glyph} `) : null,
    edgeWords(e, other), bad ? `: ${e.verdict} — ${e.reason}` : "");
}

export function topologyList(topo) {
  const names = Object.fromEntries(topo.nodes.map((n) => [n.id, n.kind === "gpu" ? `GPU${n.gpu}` : n.label]));
  const gpus = topo.nodes.filter((n) => n.kind === "gpu")
    .sort((a, b) => verdictOf(b.verdict).rank - verdictOf(a.verdict).rank  // the one ordering
      || scopeOfText(a.reason) - scopeOfText(b.reason) || (a.gpu ?? 0) - (b.gpu ?? 0));  // (faults.js)
  return h("ul", { class: "topo-items", "aria-label": "Topology as a list, GPUs at fault first" },
    gpus.map((n) => {
      const edges = topo.edges.filter((e) => e.source === n.id || e.target === n.id);
      return h("li", { "data-gpu": n.gpu, class: `topo-gpu v-${n.verdict}` },
        h("b", {}, `GPU${n.gpu} `), badge(n.verdict, n.reason),
        n.verdict !== "healthy" ? h("span", { class: "why" }, ` ${n.reason}`) : null,
        h("ul", { class: "topo-edges" }, edges.map((e) => edgeItem(e, n.id, names))));
    }));
}
