// Drawing with plotly.js (loaded by index.html from /static/vendor/plotly-<version>.min.js).
// `Plotly.react` redraws in place, and every layout carries `uirevision`, so a refresh keeps
// the user's zoom and legend choices. A chart element gets data-ready="true" once drawn.

import { PLOT_CONFIG } from "./palette.js";

export async function draw(el, data, layout, config = PLOT_CONFIG) {
  await window.Plotly.react(el, data, layout, config);
  el.dataset.ready = "true";
  return el;
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
