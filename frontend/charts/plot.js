// Drawing with plotly.js. It is loaded when a page with charts opens (by boot.js when the
// first URL is one, else when the view mounts), from the versioned URL index.html names
// (/static/vendor/plotly-cartesian-<version>.min.js, the heatmap+scatter partial bundle): 1.5 MB of script the fleet page
// never needs. `Plotly.react` redraws in place, and every layout
// carries `uirevision`, so a refresh keeps the user's zoom and legend choices. A chart
// element gets data-ready="true" once drawn.

import { esc } from "../shared/dom.js";
import { PLOT_CONFIG } from "../shared/palette.js";

let loading = null;

/** The <script> loading plotly.js: the one boot.js started, or a new one. */
function plotlyScript() {
  const started = document.getElementById("plotly-js");
  if (started && started.dataset.state !== "failed") return started;
  started?.remove();
  const script = document.createElement("script");
  script.id = "plotly-js";
  script.src = document.querySelector('meta[name="peerwatch-plotly"]').content;
  document.head.append(script);
  return script;
}

/** window.Plotly, loading plotly.js first if no page has needed it yet. */
export function plotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  loading ||= new Promise((resolve, reject) => {
    const script = plotlyScript();
    script.addEventListener("load", () => resolve(window.Plotly));
    script.addEventListener("error", () => {
      loading = null;
      script.dataset.state = "failed";
      reject(new Error(`could not load plotly.js from ${script.src}`));
    });
  });
  return loading;
}

export async function draw(el, data, layout, config = PLOT_CONFIG) {
  const Plotly = await plotly();
  await Plotly.react(el, data, layout, config);
  el.dataset.ready = "true";
  return el;
}

/**
 * An invisible line across [since, until]: time axes autorange over the page's window this
 * way instead of fixing `range`, so a refresh (which moves the window) never overrides the
 * user's zoom (uirevision keeps it while `autorange` stays what it was), and a double-click
 * returns to the page's current window.
 */
export function windowTrace(since, until) {
  return { type: "scatter", mode: "lines", name: "window", x: [since, until], y: [0, 0],
    line: { width: 0 }, hoverinfo: "skip", showlegend: false };
}

/** Listen to a Plotly event once per element, however often the chart is redrawn. */
export function onPlotly(el, event, handler) {
  const key = `bound_${event.replace(/\W/g, "_")}`;
  if (el.dataset[key]) return;
  el.dataset[key] = "1";
  el.on(event, handler);
}

export function purge(...elements) {
  for (const el of elements) if (el && window.Plotly) window.Plotly.purge(el);
}

/** A note drawn in the middle of an empty chart, so "no data" never looks like "broken". */
export function emptyNote(text) {
  return { text, xref: "paper", yref: "paper", x: 0.5, y: 0.5, showarrow: false,
    font: { size: 12, color: "#8a93a6" } };
}

/**
 * Escape `text` for a hover label and break it into lines of about `width` characters at
 * spaces, so a long reason never runs off the side of the chart.
 */
export function wrapHover(text, width = 64) {
  const lines = [];
  let line = "";
  for (const word of String(text ?? "").split(/\s+/).filter(Boolean)) {
    if (line && line.length + word.length + 1 > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(line);
  return lines.map(esc).join("<br>");
}
