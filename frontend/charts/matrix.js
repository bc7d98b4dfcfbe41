// The bandwidth matrix of one test, from GET /hosts/{host}/matrix?test=: a heatmap with
// GPU(row) -> GPU(column), coloured by measured/expected (palette.js RATIO_SCALE: blue = as
// expected, orange to vermillion = slow), the measured value printed in each cell, and degraded or down pairs marked
// with their verdict's shape. Click a cell, or focus the chart and use the arrow keys and
// Enter, to open that pair's time series.

import { esc, h } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { baseLayout, RATIO_SCALE, VERDICTS, verdictOf } from "../shared/palette.js";
import { draw, onPlotly, wrapHover } from "./plot.js";

function cellText(cell, unit) {
  if (cell.error) return "err";
  if (cell.value === null || cell.value === undefined) return "";
  return unit === "s" ? (cell.value * 1e6).toFixed(2) : (cell.value / 1e9).toFixed(0);
}

export function cellHover(cell, unit) {
  const lines = [`<b>GPU${cell.src} → GPU${cell.dst}</b>`];
  if (cell.error) lines.push(`failed: ${esc(cell.error)}`);
  lines.push(`measured ${esc(fmt.value(cell.value, unit))}`,
    `expected ${esc(fmt.value(cell.expected, unit))}` +
      (cell.expected_basis ? ` (${esc(cell.expected_basis)})` : ""),
    `ratio ${esc(fmt.ratio(cell.ratio))}` +
      (cell.baseline ? ` · baseline ${esc(fmt.value(cell.baseline, unit))} (${esc(fmt.ratio(cell.baseline_ratio))})` : ""));
  if (cell.contended) lines.push(`contended: ${esc(fmt.bytes(cell.foreign_bytes))} of other traffic`);
  const owner = explainedText(cell);
  if (owner) lines.push(`<b>${esc(owner)}</b>`);
  lines.push(wrapHover(`${verdictOf(cell.verdict).glyph} ${cell.verdict}: ${cell.reason}`),
    `measured ${esc(fmt.time(cell.measured_at))}`);
  return lines.join("<br>");
}

/** "explained by GPU3 (GPU3, whose copies fail with every peer)" where the pair's state is a
 * GPU's fault (that GPU's alert is the page), "page waits for GPU3's pattern: …" where its
 * own page is held while a GPU pattern forms; "" for a pair that speaks for itself. */
export function explainedText(cell) {
  const parts = [];
  if (cell.explained_by !== null && cell.explained_by !== undefined) {
    parts.push(`explained by GPU${cell.explained_by}` + (cell.cause ? ` (${cell.cause})` : ""));
  } else if (cell.cause) parts.push(cell.cause);
  if (cell.waits_for) parts.push(`page waits for ${cell.waits_for}`);
  return parts.join("; ");
}

/** z (ratio), text and hover grids indexed [row = src][column = dst], in `gpus` order. */
export function matrixGrids(matrix) {
  const at = new Map(matrix.gpus.map((g, i) => [g, i]));
  const n = matrix.gpus.length;
  const grid = (fill) => Array.from({ length: n }, () => Array(n).fill(fill));
  const z = grid(null), text = grid(""), hover = grid(""), cells = grid(null), unknown = grid(null);
  for (const c of matrix.cells) {
    const i = at.get(c.src), j = at.get(c.dst);
    if (i === undefined || j === undefined) continue;
    // An unknown pair (a GPU lost, a host stale) is not current: grey, "last known at …",
    // its last figure kept only in the hover, never coloured as if it were measured now.
    const known = c.verdict !== "unknown";
    z[i][j] = !known ? null : c.error ? 0 : c.ratio;
    unknown[i][j] = known ? null : 1;
    text[i][j] = known ? cellText(c, matrix.unit) : "?";
    hover[i][j] = known ? cellHover(c, matrix.unit) : unknownHover(c, matrix.unit);
    cells[i][j] = c;
  }
  for (let i = 0; i < n; i += 1) hover[i][i] = `GPU${matrix.gpus[i]} (itself)`;
  return { z, text, hover, cells, unknown };
}

function unknownHover(c, unit) {
  const reason = /last known at/.test(c.reason || "") ? c.reason
    : `last known at ${fmt.time(c.measured_at)}: ${c.last_verdict || "unknown"} — ${c.reason}`;
  const owner = explainedText(c);
  return [`<b>GPU${c.src} → GPU${c.dst}</b>`, `? unknown now`,
    `last measured ${esc(fmt.value(c.value, unit))} at ${esc(fmt.time(c.measured_at))}`,
    ...(owner ? [`<b>${esc(owner)}</b>`] : []), wrapHover(reason)].join("<br>");
}

function markerTrace(matrix, selected) {
  // Verdict marks sit in a cell's top-right corner so the number stays readable.
  const marks = { x: [], y: [], symbol: [], color: [], size: [] };
  const cell = 300 / Math.max(1, matrix.gpus.length);
  for (const c of matrix.cells) {
    const bad = c.verdict === "degraded" || c.verdict === "down" || c.error;
    if (!bad) continue;
    const v = verdictOf(c.error ? "down" : c.verdict);
    marks.x.push(c.dst + 0.3);
    marks.y.push(c.src - 0.3);
    marks.symbol.push(v.symbol);
    marks.color.push(v.color);
    marks.size.push(Math.max(7, Math.min(14, cell * 0.22)));
  }
  if (selected) {
    marks.x.push(selected[1]);
    marks.y.push(selected[0]);
    marks.symbol.push("square-open");
    marks.color.push("#ffffff");
    marks.size.push(Math.max(12, cell * 0.9));
  }
  return { type: "scatter", mode: "markers", name: "marks", x: marks.x, y: marks.y,
    hoverinfo: "skip", showlegend: false, cliponaxis: false,
    marker: { symbol: marks.symbol, color: marks.color, size: marks.size,
      line: { width: 2, color: marks.color } } };
}

export function matrixFigure(matrix, { selected = null, cursor = null } = {}) {
  const { z, text, hover, unknown } = matrixGrids(matrix);
  const gpus = matrix.gpus;
  const labels = gpus.map((g) => `GPU${g}`);
  const heat = {
    type: "heatmap", name: matrix.test, x: gpus, y: gpus, z, text, hovertext: hover,
    hoverinfo: "text", texttemplate: "%{text}", xgap: 2, ygap: 2,
    textfont: { size: gpus.length > 8 ? 9 : 12 },
    colorscale: RATIO_SCALE, zmin: 0.3, zmax: 1.05,
    colorbar: { title: { text: "measured /<br>expected", side: "top" }, thickness: 10, len: 0.9,
      tickfont: { size: 10 } },
  };
  const grey = { type: "heatmap", name: "unknown", x: gpus, y: gpus, z: unknown, text, hovertext: hover,
    hoverinfo: "text", texttemplate: "%{text}", xgap: 2, ygap: 2, showscale: false, zmin: 0, zmax: 1,
    colorscale: [[0, "#3a3f4b"], [1, "#3a3f4b"]], textfont: { color: "#d5dbe5" } };
  const shapes = cursor ? [{ type: "rect", xref: "x", yref: "y", x0: cursor[1] - 0.5,
    x1: cursor[1] + 0.5, y0: cursor[0] - 0.5, y1: cursor[0] + 0.5,
    line: { color: "#56B4E9", width: 3, dash: "dot" } }] : [];
  const layout = baseLayout({
    height: 380, margin: { l: 56, r: 8, t: 8, b: 48 }, shapes,
    xaxis: { title: { text: `GPU(column) = destination · ${esc(fmt.axisUnit(matrix.unit))} in cells` },
      tickvals: gpus, ticktext: labels, side: "bottom", showgrid: false, constrain: "domain" },
    yaxis: { title: { text: "GPU(row) = source" }, tickvals: gpus, ticktext: labels,
      autorange: "reversed", showgrid: false, scaleanchor: "x", constrain: "domain" },
  });
  const traces = unknown.some((row) => row.some((v) => v !== null)) ? [heat, grey] : [heat];
  return { data: [...traces, markerTrace(matrix, selected)], layout };
}

/**
 * Draw the matrix into `el` and make it pickable: click, or arrows + Enter when focused.
 * `state` = {matrix, selected: [src, dst] | null}; `onPick(src, dst)` opens a pair.
 */
export function matrixChart(el, liveRegion, onPick) {
  let state = { matrix: null, selected: null };
  let cursor = null;
  el.tabIndex = 0;
  el.setAttribute("role", "application");
  el.setAttribute("aria-label",
    "Bandwidth matrix. Arrow keys move between pairs, Enter opens the pair's time series.");

  async function render() {
    const { data, layout } = matrixFigure(state.matrix, { selected: state.selected,
      cursor: document.activeElement === el ? cursor : null });
    await draw(el, data, layout);
    onPlotly(el, "plotly_click", (event) => {
      const p = event.points?.find((q) => q.data.type === "heatmap");
      if (p && p.x !== p.y) onPick(Number(p.y), Number(p.x));
    });
  }

  function announce() {
    if (!cursor) return;
    const cell = state.matrix.cells.find((c) => c.src === cursor[0] && c.dst === cursor[1]);
    liveRegion.textContent = cell
      ? `GPU${cell.src} → GPU${cell.dst}: ${fmt.value(cell.value, state.matrix.unit)}, ` +
        `${fmt.ratio(cell.ratio)} of expected, ${cell.verdict}` +
        (explainedText(cell) ? `, ${explainedText(cell)}` : "") + `. ${cell.reason}`
      : `GPU${cursor[0]} → GPU${cursor[1]}: no data`;
  }

  el.addEventListener("keydown", (event) => {
    const gpus = state.matrix?.gpus;
    if (!gpus?.length) return;
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (event.key === "Enter" && cursor && cursor[0] !== cursor[1]) {
      event.preventDefault();
      onPick(cursor[0], cursor[1]);
      return;
    }
    if (!moves[event.key]) return;
    event.preventDefault();
    const at = cursor ? [gpus.indexOf(cursor[0]), gpus.indexOf(cursor[1])] : [0, 0];
    const clamp = (i) => Math.max(0, Math.min(gpus.length - 1, i));
    cursor = [gpus[clamp(at[0] + moves[event.key][0])], gpus[clamp(at[1] + moves[event.key][1])]];
    announce();
    render();
  });
  el.addEventListener("focus", () => {
    cursor = cursor || state.selected || [state.matrix?.gpus[0], state.matrix?.gpus[1]];
    announce();
    if (state.matrix) render();
  });
  el.addEventListener("blur", () => { if (state.matrix) render(); });

  return {
    async set(matrix, selected) {
      state = { matrix, selected };
      await render();
    },
  };
}

export function matrixLegend() {
  return h("span", { class: "legend" }, ["degraded", "down"].map((v) =>
    h("span", { class: `chip v-${v}` }, h("span", { class: "glyph" }, VERDICTS[v].glyph), ` ${v}`)),
  h("span", { class: "chip" }, "□ selected"),
  h("span", { class: "muted" }, "colour = measured/expected: blue = as expected, orange = slow"));
}
