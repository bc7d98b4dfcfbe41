// Per GPU, the SM clock, power and temperature the probe sampled around each sweep, from
// GET /hosts/{host}/gpus/series (issue 40: what a Grafana user looked for beside the
// bandwidth): three stacked panels sharing the time axis, one colour per GPU, the newest
// power limit and slowdown temperature as dotted lines. A slow pair reads against a power cap
// or a hot GPU at the same time (the crosshair and zoom are the page's, timeline.js).

import { baseLayout, OKABE_ITO, SERIES, THEME } from "../shared/palette.js";
import { emptyNote, windowTrace } from "./plot.js";

const PANELS = [
  { key: "sm_clock_mhz", axis: "y", title: "SM MHz", domain: [0.7, 1] },
  { key: "power_w", axis: "y2", title: "W", domain: [0.36, 0.64], limit: "power_limit_w" },
  { key: "temperature_c", axis: "y3", title: "°C", domain: [0, 0.3], limit: "slowdown_temperature_c" },
];

// no green: it says "healthy" on this page, and a GPU's line says nothing of the kind (a
// stale host's page draws no green at all)
const COLOURS = SERIES.filter((c) => c !== OKABE_ITO.green);

function traces(gpus) {
  return gpus.flatMap((g, i) => PANELS.map((p) => ({
    type: "scatter", mode: "lines+markers", name: `GPU${g.gpu}`, legendgroup: `GPU${g.gpu}`,
    showlegend: p.axis === "y", x: g.at, y: g[p.key], yaxis: p.axis, connectgaps: false,
    marker: { size: 3 }, line: { color: COLOURS[i % COLOURS.length], width: 1.2 },
    hovertemplate: `GPU${g.gpu} %{y} ${p.title}<extra></extra>`,
  })));
}

/** The highest limit among the GPUs per panel (a dotted line: how close each runs to it). */
function limitShapes(gpus) {
  return PANELS.filter((p) => p.limit).flatMap((p) => {
    const limit = Math.max(...gpus.map((g) => g[p.limit] ?? -Infinity));
    return Number.isFinite(limit) ? [{ type: "line", xref: "paper", x0: 0, x1: 1, yref: p.axis,
      y0: limit, y1: limit, name: `limit ${p.key}`, line: { color: THEME.muted, width: 1, dash: "dot" } }] : [];
  });
}

export function gpuSeriesFigure(answer) {
  const gpus = answer.gpus || [];
  const axis = (p) => ({ domain: p.domain, title: { text: p.title }, gridcolor: THEME.grid,
    zerolinecolor: THEME.grid, linecolor: THEME.grid, color: THEME.muted, automargin: true,
    rangemode: "tozero" });
  const layout = baseLayout({
    height: 380, hovermode: "x unified", margin: { l: 56, r: 12, t: 30, b: 36 },
    xaxis: { type: "date" }, // autoranged over the window trace: a refresh keeps the zoom
    yaxis: axis(PANELS[0]), yaxis2: axis(PANELS[1]), yaxis3: axis(PANELS[2]),
    shapes: limitShapes(gpus),
    annotations: gpus.length ? [] : [emptyNote("no clocks samples in this range (a probe sends them around each sweep)")],
  });
  return { data: [windowTrace(answer.since, answer.until), ...traces(gpus)], layout };
}
