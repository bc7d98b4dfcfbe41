// One colour-blind-safe palette for every view (Okabe & Ito, "Color Universal Design").
// A verdict is never colour alone: each has a glyph and its word next to it, and on charts a
// marker shape of its own. The bandwidth heatmap runs from vermillion (slow) through orange to
// a calm blue (as fast as expected): orange against blue reads apart with any colour-vision
// deficiency, and "as expected" is no longer cividis's bright yellow, which an operator read
// as a warning (issue 40).

import { h } from "./dom.js";

export const OKABE_ITO = {
  orange: "#E69F00", sky: "#56B4E9", green: "#009E73", yellow: "#F0E442",
  blue: "#0072B2", vermillion: "#D55E00", purple: "#CC79A7", grey: "#999999",
};

/** measured/expected 0.3 -> 1.05: vermillion, orange, then blues; healthy cells are blue. */
export const RATIO_SCALE = [[0, "#9c3d00"], [0.35, OKABE_ITO.vermillion], [0.62, OKABE_ITO.orange],
  [0.8, "#4a7fa8"], [1, "#2b5c8a"]];

export const VERDICTS = {
  healthy: { color: OKABE_ITO.green, glyph: "✓", symbol: "circle", rank: 0 },
  unknown: { color: OKABE_ITO.grey, glyph: "?", symbol: "diamond", rank: 1 },
  degraded: { color: OKABE_ITO.orange, glyph: "▲", symbol: "triangle-up", rank: 2 },
  down: { color: OKABE_ITO.vermillion, glyph: "✕", symbol: "x", rank: 3 },
};

export function verdictOf(name) {
  return VERDICTS[name] || VERDICTS.unknown;
}

/** A badge: glyph + word, coloured, with the reason as its tooltip. */
export function badge(verdict, reason = "") {
  const v = verdictOf(verdict);
  return h("span", { class: `badge v-${VERDICTS[verdict] ? verdict : "unknown"}`, title: reason },
    h("span", { class: "glyph", "aria-hidden": "true" }, v.glyph), ` ${verdict}`);
}

// Series colours for lines that are not verdicts (GPUs, link counters): Okabe-Ito order.
export const SERIES = [OKABE_ITO.sky, OKABE_ITO.orange, OKABE_ITO.green, OKABE_ITO.yellow,
  OKABE_ITO.blue, OKABE_ITO.vermillion, OKABE_ITO.purple, "#BBBBBB"];

export const THEME = {
  paper: "#161a22", plot: "#161a22", grid: "#2a303c", text: "#d5dbe5", muted: "#8a93a6",
  font: "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif",
};

export const HOVER_LABEL = { bgcolor: "#1c212b", bordercolor: "#8a93a6", align: "left",
  font: { family: THEME.font, size: 12, color: "#eef1f6" } };

/** Plotly layout defaults for the dark theme; `uirevision` keeps zoom across refreshes. */
export function baseLayout(extra = {}) {
  const axis = { gridcolor: THEME.grid, zerolinecolor: THEME.grid, linecolor: THEME.grid,
    color: THEME.muted, automargin: true };
  return {
    paper_bgcolor: THEME.paper, plot_bgcolor: THEME.plot,
    font: { family: THEME.font, size: 11, color: THEME.text },
    margin: { l: 48, r: 12, t: 28, b: 36 },
    // Light text on a dark panel, set explicitly: left to itself Plotly picks a text colour
    // from the trace and drew dark grey on black (issue 14). Contrast ~13:1.
    hoverlabel: HOVER_LABEL,
    legend: { orientation: "h", y: -0.18, font: { size: 10 } },
    uirevision: "keep",
    ...extra,
    xaxis: { ...axis, ...(extra.xaxis || {}) },
    yaxis: { ...axis, ...(extra.yaxis || {}) },
  };
}

// No Plotly logo and no "Share chart" button: plotly.js 4 shows one by default
// (showSendToCloud) that offers to upload the chart to a public cloud service.
export const PLOT_CONFIG = {
  displaylogo: false, responsive: true, showSendToCloud: false, showEditInChartStudio: false,
  modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d", "sendDataToCloud",
    "editInChartStudio"],
};

const SCALE_LOW = 0.3, SCALE_HIGH = 1.05; // the heatmap's zmin/zmax (charts/matrix.js)

function rgbOf(hex) {
  return [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
}

/** RATIO_SCALE's colour at a ratio, as the host matrix's heatmap draws it ("#rrggbb"). */
export function ratioColour(ratio) {
  const at = Math.min(1, Math.max(0, (ratio - SCALE_LOW) / (SCALE_HIGH - SCALE_LOW)));
  let i = 1;
  while (i < RATIO_SCALE.length - 1 && RATIO_SCALE[i][0] < at) i += 1;
  const [p0, c0] = RATIO_SCALE[i - 1], [p1, c1] = RATIO_SCALE[i];
  const t = p1 === p0 ? 1 : Math.min(1, Math.max(0, (at - p0) / (p1 - p0)));
  const [a, b] = [rgbOf(c0), rgbOf(c1)];
  return `#${a.map((x, k) => Math.round(x + (b[k] - x) * t).toString(16).padStart(2, "0")).join("")}`;
}

/** The ratio at which RATIO_SCALE turns from orange to blue (its 0.8 stop): 0.9. */
export const RATIO_BLUE_FROM = SCALE_LOW + 0.8 * (SCALE_HIGH - SCALE_LOW);

/** Black or white, whichever reads better on `hex` (WCAG contrast: at least 4.58:1). */
export function textOn(hex) {
  const lin = rgbOf(hex).map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  const lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
  return (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) ? "#000000" : "#ffffff";
}
