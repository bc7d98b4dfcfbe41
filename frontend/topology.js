// The topology graph of one host, from GET /hosts/{host}/topology: GPUs on a ring, the
// NVSwitch fabric in the middle, CPU sockets outside next to the GPUs they host. NVLink edges
// are solid, as thick as their width (NV#) and labelled with it; PCIe paths are dotted and
// labelled with their level (PIX … SYS) or generation and width. Edge and node colours are
// verdicts, and every edge's hover says why.

import { esc } from "./dom.js";
import * as fmt from "./format.js";
import { baseLayout, THEME, verdictOf } from "./palette.js";

const NODE_SYMBOL = { gpu: "square", nvswitch: "hexagon2", cpu: "diamond-wide" };
const NODE_SIZE = { gpu: 30, nvswitch: 40, cpu: 28 };

/** Node positions: {id: [x, y]}. GPUs on a unit circle, switch at the centre, CPUs outside. */
export function layoutNodes(nodes, edges) {
  const gpus = nodes.filter((n) => n.kind === "gpu").sort((a, b) => (a.gpu ?? 0) - (b.gpu ?? 0));
  const pos = {};
  gpus.forEach((n, i) => {
    const angle = Math.PI / 2 + (gpus.length === 2 ? Math.PI / 2 : 0) - (2 * Math.PI * i) / gpus.length;
    pos[n.id] = [Math.cos(angle), Math.sin(angle)];
  });
  const switches = nodes.filter((n) => n.kind === "nvswitch");
  switches.forEach((n, i) => { pos[n.id] = [(i - (switches.length - 1) / 2) * 0.5, 0]; });
  const cpus = nodes.filter((n) => n.kind === "cpu");
  cpus.forEach((n, i) => {
    const peers = edges.filter((e) => e.source === n.id || e.target === n.id)
      .map((e) => pos[e.source === n.id ? e.target : e.source]).filter(Boolean);
    let [x, y] = peers.reduce(([ax, ay], [px, py]) => [ax + px, ay + py], [0, 0]);
    if (Math.hypot(x, y) < 1e-6) [x, y] = [(i - (cpus.length - 1) / 2) * 0.8, -1];
    const r = Math.hypot(x, y);
    pos[n.id] = [(x / r) * 1.6, (y / r) * 1.6];
  });
  return pos;
}

function edgeLabel(e) {
  if (e.kind === "nvlink") {
    const total = e.links_total && e.links_total !== e.width ? `/${e.links_total}` : "";
    return `NV${e.width ?? "?"}${total}`;
  }
  if (e.path_level) return e.path_level;
  if (e.pcie_gen) return `Gen${e.pcie_gen} x${e.pcie_width ?? "?"}`;
  return "PCIe";
}

function edgeHover(e, names) {
  const lines = [`<b>${esc(names[e.source] || e.source)} — ${esc(names[e.target] || e.target)}</b>`,
    `${esc(e.kind === "nvlink" ? "NVLink" : "PCIe")} ${esc(edgeLabel(e))}` +
      (e.speed_bps ? ` × ${esc(fmt.bandwidth(e.speed_bps))} per link` : "")];
  if (e.latest_bps !== null && e.latest_bps !== undefined) {
    lines.push(`${esc(e.test || "")} ${esc(fmt.bandwidth(e.latest_bps))} of expected ` +
      `${esc(fmt.bandwidth(e.expected_bps))}`);
  }
  lines.push(`${esc(verdictOf(e.verdict).glyph)} ${esc(e.verdict)}: ${esc(e.reason)}`);
  return lines.join("<br>");
}

function edgeTraces(edges, pos, dimmed, names) {
  const traces = [];
  const mids = { x: [], y: [], text: [], hover: [], color: [], ids: [] };
  for (const e of edges) {
    const a = pos[e.source];
    const b = pos[e.target];
    if (!a || !b) continue;
    const v = verdictOf(e.verdict);
    const nvlink = e.kind === "nvlink";
    const faded = dimmed && dimmed(e);
    traces.push({
      type: "scatter", mode: "lines", x: [a[0], b[0]], y: [a[1], b[1]], hoverinfo: "skip",
      showlegend: false, opacity: faded ? 0.2 : 0.9, meta: { edge: e.id },
      line: { color: v.color, width: nvlink ? 1.5 + 5 * Math.min(1, (e.width || 0) / 18) : 1.5,
        dash: e.verdict === "down" ? "dash" : nvlink ? "solid" : "dot" },
    });
    const t = nvlink ? 0.5 : 0.42;
    mids.x.push(a[0] + (b[0] - a[0]) * t);
    mids.y.push(a[1] + (b[1] - a[1]) * t);
    mids.text.push(esc(`${e.verdict === "healthy" ? "" : `${v.glyph} `}${edgeLabel(e)}`));
    mids.hover.push(edgeHover(e, names));
    mids.color.push(e.verdict === "healthy" ? THEME.muted : v.color);
    mids.ids.push(e.id);
  }
  traces.push({
    type: "scatter", mode: "text+markers", name: "links", x: mids.x, y: mids.y, text: mids.text,
    hovertext: mids.hover, hoverinfo: "text", customdata: mids.ids, showlegend: false,
    textfont: { size: 10, color: mids.color }, textposition: "middle center",
    marker: { size: 22, color: "rgba(22,26,34,0.85)", symbol: "square" },
  });
  return traces;
}

function nodeTrace(nodes, pos, highlight) {
  const xs = [], ys = [], text = [], hover = [], colors = [], symbols = [], sizes = [], lines = [],
    opacity = [], ids = [];
  for (const n of nodes) {
    if (!pos[n.id]) continue;
    const v = verdictOf(n.verdict);
    const chosen = highlight?.has(n.id);
    xs.push(pos[n.id][0]);
    ys.push(pos[n.id][1]);
    const short = n.kind === "gpu" ? `GPU${n.gpu}` : n.kind === "nvswitch" ? "NVSwitch" : n.label;
    text.push(esc(`${n.verdict === "healthy" ? "" : `${v.glyph} `}${short}`));
    hover.push(`<b>${esc(n.label)}</b><br>${esc(v.glyph)} ${esc(n.verdict)}: ${esc(n.reason)}`);
    colors.push(v.color);
    symbols.push(NODE_SYMBOL[n.kind] || "circle");
    sizes.push((NODE_SIZE[n.kind] || 24) + (chosen ? 8 : 0));
    lines.push(chosen ? 4 : 1);
    opacity.push(highlight && !chosen && n.kind === "gpu" ? 0.35 : 1);
    ids.push(n.id);
  }
  return {
    type: "scatter", mode: "markers+text", name: "nodes", x: xs, y: ys, text, hovertext: hover,
    hoverinfo: "text", customdata: ids, textposition: "bottom center", showlegend: false,
    textfont: { size: 11, color: THEME.text },
    marker: { color: colors, symbol: symbols, size: sizes, opacity,
      line: { color: highlight ? "#ffffff" : "#0b0d12", width: lines } },
  };
}

/**
 * Figure for a topology. `highlight`: a Set of node ids (e.g. the placement's chosen GPUs);
 * the other GPUs and the edges not joining two chosen nodes are dimmed.
 */
export function topologyFigure(topo, { highlight = null, height = 380 } = {}) {
  const pos = layoutNodes(topo.nodes, topo.edges);
  const names = Object.fromEntries(topo.nodes.map((n) => [n.id, n.label]));
  const dimmed = highlight
    ? (e) => !(highlight.has(e.source) || topo.nodes.find((n) => n.id === e.source)?.kind !== "gpu")
      || !(highlight.has(e.target) || topo.nodes.find((n) => n.id === e.target)?.kind !== "gpu")
    : null;
  const data = [...edgeTraces(topo.edges, pos, dimmed, names), nodeTrace(topo.nodes, pos, highlight)];
  const axis = { visible: false, range: [-2.1, 2.1], fixedrange: false };
  const layout = baseLayout({
    height, margin: { l: 8, r: 8, t: 8, b: 8 }, hovermode: "closest", dragmode: "pan",
    xaxis: axis, yaxis: { ...axis, scaleanchor: "x", range: [-2, 2] },
  });
  return { data, layout };
}
