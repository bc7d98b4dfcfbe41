// The topology graph of one host, from GET /hosts/{host}/topology: GPUs on a ring, the
// NVSwitch fabric in the middle, CPU sockets outside next to the GPUs they host. NVLink edges
// are solid, as thick as their width (NV#) and labelled with it; PCIe paths are dotted and
// labelled with their level (PIX … SYS) or generation and width. Edge and node colours are
// verdicts, and every edge's hover says why.

import { esc } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { baseLayout, THEME, verdictOf } from "../shared/palette.js";
import { wrapHover } from "./plot.js";

const NODE_SYMBOL = { gpu: "square", nvswitch: "hexagon2", cpu: "diamond-wide" };
const NODE_SIZE = { gpu: 30, nvswitch: 44, cpu: 26 };

const RX = 1.55; // the GPU ring is an ellipse: panels are wider than tall
const RY = 1;
const CPU_X = 2.5;

/** Node positions: {id: [x, y]}. GPUs on a ring, switch in the middle, CPUs on the sides. */
export function layoutNodes(nodes, edges) {
  const gpus = nodes.filter((n) => n.kind === "gpu").sort((a, b) => (a.gpu ?? 0) - (b.gpu ?? 0));
  const pos = {};
  gpus.forEach((n, i) => {
    const angle = Math.PI / 2 + (gpus.length === 2 ? Math.PI / 2 : 0) - (2 * Math.PI * i) / gpus.length;
    pos[n.id] = [RX * Math.cos(angle), RY * Math.sin(angle)];
  });
  const switches = nodes.filter((n) => n.kind === "nvswitch");
  switches.forEach((n, i) => { pos[n.id] = [(i - (switches.length - 1) / 2) * 0.6, 0]; });
  const cpus = nodes.filter((n) => n.kind === "cpu");
  cpus.forEach((n, i) => {
    const peers = edges.filter((e) => e.source === n.id || e.target === n.id)
      .map((e) => pos[e.source === n.id ? e.target : e.source]).filter(Boolean);
    const cx = peers.reduce((a, p) => a + p[0], 0) / Math.max(1, peers.length);
    const cy = peers.reduce((a, p) => a + p[1], 0) / Math.max(1, peers.length);
    if (Math.abs(cx) < 0.2) pos[n.id] = [(i - (cpus.length - 1) / 2) * 1.2, -1.55];
    else pos[n.id] = [Math.sign(cx) * CPU_X, Math.max(-0.9, Math.min(0.9, cy))];
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
  lines.push(wrapHover(`${verdictOf(e.verdict).glyph} ${e.verdict}: ${e.reason}`));
  return lines.join("<br>");
}

function isSocketEdge(e) {
  return e.kind === "pcie" && (e.source.startsWith("cpu") || e.target.startsWith("cpu"));
}

function edgeStyle(e) {
  const v = verdictOf(e.verdict);
  if (e.kind === "nvlink") {
    return { color: v.color, width: 1.5 + 5 * Math.min(1, (e.width || 0) / 18),
      dash: e.verdict === "down" ? "dash" : "solid" };
  }
  const healthySocket = isSocketEdge(e) && e.verdict === "healthy";
  return { color: healthySocket ? THEME.grid : v.color, width: healthySocket ? 1.5 : 2, dash: "dot" };
}

/**
 * Edge lines: one trace per line style (colour, width, dash, opacity), each edge a segment of
 * it between None separators, its id in the trace's `meta.edges`. One trace per edge made an
 * 8-GPU host's graph 18 traces, each laid out and drawn on its own: most of the graph's
 * drawing time on a cold page (bench/dashboard.py). Healthy styles draw first, faults on top.
 */
function edgeLines(styled) {
  const groups = new Map();
  for (const { e, a, b, line, opacity } of styled) {
    const key = JSON.stringify([line.color, line.width, line.dash, opacity]);
    if (!groups.has(key)) {
      groups.set(key, { type: "scatter", mode: "lines", name: `edges ${groups.size + 1}`, x: [], y: [],
        meta: { edges: [] }, hoverinfo: "skip", showlegend: false, opacity, line,
        rank: opacity < 0.5 ? 0 : e.verdict === "healthy" ? 1 : 2 });
    }
    const g = groups.get(key);
    g.x.push(a[0], b[0], null);
    g.y.push(a[1], b[1], null);
    g.meta.edges.push(e.id);
  }
  return [...groups.values()].sort((p, q) => p.rank - q.rank).map(({ rank: _rank, ...t }) => t);
}

/** Edge lines (`edgeLines`), an invisible hover target at each edge's middle, and its label. */
function edgeTraces(edges, pos, dimmed, names) {
  const styled = [];
  const annotations = [];
  const mids = { x: [], y: [], hover: [], ids: [] };
  for (const e of edges) {
    const a = pos[e.source];
    const b = pos[e.target];
    if (!a || !b) continue;
    const v = verdictOf(e.verdict);
    const faded = dimmed && dimmed(e);
    styled.push({ e, a, b, line: edgeStyle(e), opacity: faded ? 0.15 : 0.95 });
    // Labels of switch edges sit nearer the GPU, clear of the switch's own label.
    const t = e.target === "nvswitch" ? 0.4 : e.source === "nvswitch" ? 0.6 : 0.5;
    const [x, y] = [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t];
    mids.x.push(x);
    mids.y.push(y);
    mids.hover.push(edgeHover(e, names));
    mids.ids.push(e.id);
    if (isSocketEdge(e) && e.verdict === "healthy") continue;
    const healthy = e.verdict === "healthy";
    annotations.push({ x, y, xref: "x", yref: "y", showarrow: false, captureevents: false,
      text: esc(`${healthy ? "" : `${v.glyph} `}${edgeLabel(e)}`), opacity: faded ? 0.3 : 1,
      font: { size: 10, color: healthy ? THEME.muted : v.color }, bgcolor: THEME.paper,
      bordercolor: healthy ? THEME.grid : v.color, borderwidth: 1, borderpad: 2 });
  }
  const traces = edgeLines(styled);
  traces.push({
    type: "scatter", mode: "markers", name: "links", x: mids.x, y: mids.y,
    hovertext: mids.hover, hoverinfo: "text", customdata: mids.ids, showlegend: false,
    marker: { size: 18, color: "rgba(0,0,0,0)", line: { width: 0 } },
  });
  return { traces, annotations };
}

/** Put a node's label on the side facing away from the centre, clear of its edges. */
function outward([x, y]) {
  if (Math.hypot(x, y) < 0.3) return "bottom center";
  if (Math.abs(y) >= Math.abs(x) * 0.4) return y > 0 ? "top center" : "bottom center";
  return x > 0 ? "middle right" : "middle left";
}

function nodeTrace(nodes, pos, highlight, order) {
  const xs = [], ys = [], text = [], hover = [], colors = [], symbols = [], sizes = [], lines = [],
    opacity = [], ids = [], positions = [];
  for (const n of nodes) {
    if (!pos[n.id]) continue;
    const v = verdictOf(n.verdict);
    const chosen = highlight?.has(n.id);
    xs.push(pos[n.id][0]);
    ys.push(pos[n.id][1]);
    const short = n.kind === "gpu" ? `GPU${n.gpu}` : n.kind === "nvswitch" ? "NVSwitch" : n.id.toUpperCase();
    const step = order?.get(n.id);
    text.push(esc(`${n.verdict === "healthy" ? "" : `${v.glyph} `}${short}${step ? ` #${step}` : ""}`));
    hover.push(`<b>${esc(n.label)}</b><br>${wrapHover(`${v.glyph} ${n.verdict}: ${n.reason}`)}`);
    colors.push(v.color);
    symbols.push(NODE_SYMBOL[n.kind] || "circle");
    sizes.push((NODE_SIZE[n.kind] || 24) + (chosen ? 8 : 0));
    lines.push(chosen ? 4 : 1);
    opacity.push(highlight && !chosen && n.kind === "gpu" ? 0.35 : 1);
    ids.push(n.id);
    positions.push(outward(pos[n.id]));
  }
  return {
    type: "scatter", mode: "markers+text", name: "nodes", x: xs, y: ys, text, hovertext: hover,
    hoverinfo: "text", customdata: ids, textposition: positions, showlegend: false,
    textfont: { size: 11, color: THEME.text },
    marker: { color: colors, symbol: symbols, size: sizes, opacity,
      line: { color: highlight ? "#ffffff" : "#0b0d12", width: lines } },
  };
}

const SLOWEST = /slowest: GPU(\d+)->GPU(\d+)/;

/**
 * Colour only what is at fault. A GPU's edge to the NVSwitch is judged by the slowest pair
 * across it, so one GPU at fault (say GPU2 of an NVL72 tray with links down) would paint every
 * healthy GPU's edge too: each has a slow pair ending at GPU2. An edge whose links are all up,
 * from a GPU judged healthy, whose slowest pair ends at another GPU that is itself at fault,
 * is drawn healthy, its hover saying where the fault is.
 */
export function blameFaultyEnds(topo) {
  const verdict = Object.fromEntries(topo.nodes.map((n) => [n.id, n.verdict]));
  const edges = topo.edges.map((e) => {
    if (e.kind !== "nvlink" || e.verdict === "healthy" || e.verdict === "unknown") return e;
    const gpu = e.source === "nvswitch" ? e.target : e.target === "nvswitch" ? e.source : null;
    if (!gpu || verdict[gpu] !== "healthy" || (e.links_total && e.width !== e.links_total)) return e;
    const m = SLOWEST.exec(e.reason || "");
    const other = m && [`gpu${m[1]}`, `gpu${m[2]}`].find((id) => id !== gpu);
    if (!other || verdict[other] === "healthy" || verdict[other] === undefined) return e;
    return { ...e, verdict: "healthy", judged: e.verdict,
      reason: `all links up; its slowest pair ends at ${other.toUpperCase()}, which is at fault ` +
        `(${e.verdict} as judged: ${e.reason})` };
  });
  return { ...topo, edges };
}

/**
 * Figure for a topology. `highlight`: a Set of node ids (e.g. the placement's chosen GPUs);
 * the other GPUs and the edges not joining two chosen nodes are dimmed. `order`: a Map of
 * node id -> position (a ring's order), shown as "#n" after the name.
 */
export function topologyFigure(judged, { highlight = null, order = null, height = 400 } = {}) {
  const topo = blameFaultyEnds(judged);
  const pos = layoutNodes(topo.nodes, topo.edges);
  const names = Object.fromEntries(topo.nodes.map((n) => [n.id, n.label]));
  const dimmed = highlight
    ? (e) => !(highlight.has(e.source) || topo.nodes.find((n) => n.id === e.source)?.kind !== "gpu")
      || !(highlight.has(e.target) || topo.nodes.find((n) => n.id === e.target)?.kind !== "gpu")
    : null;
  const edges = edgeTraces(topo.edges, pos, dimmed, names);
  const data = [...edges.traces, nodeTrace(topo.nodes, pos, highlight, order)];
  const axis = { visible: false, range: [-3.1, 3.1] };
  const layout = baseLayout({
    height, margin: { l: 8, r: 8, t: 8, b: 8 }, hovermode: "closest", dragmode: "pan",
    annotations: edges.annotations,
    xaxis: axis, yaxis: { ...axis, scaleanchor: "x", range: [-1.85, 1.45] },
  });
  return { data, layout };
}
