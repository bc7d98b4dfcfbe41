// Drawing with plotly.js (loaded by index.html from /static/vendor/plotly-<version>.min.js).
// `Plotly.react` redraws in place, and every layout carries `uirevision`, so a refresh keeps
// the user's zoom and legend choices. A chart element gets data-ready="true" once drawn.

import { PLOT_CONFIG } from "./palette.js";

export async function draw(el, data, layout, config = PLOT_CONFIG) {
  keepUserRanges(el, layout);
  await window.Plotly.react(el, data, layout, config);
  onPlotly(el, "plotly_relayout", (change) => noteUserRanges(el, change));
  el.dataset.ready = "true";
  return el;
}

// uirevision keeps a user's zoom only while the code's own value for that range stays the
// same; our time axes move forward with every refresh. So once the user has zoomed an axis,
// hand Plotly the previous code range again (it then keeps the user's); a double-click
// (autorange) gives the axis back to the code.
function keepUserRanges(el, layout) {
  const last = el.pwLast;
  const sameView = last && last.uirevision === layout.uirevision;
  if (!sameView) el.pwZoomed = {};
  const ranges = {};
  for (const axis of ["xaxis", "yaxis"]) {
    if (!layout[axis]?.range) continue;
    if (sameView && el.pwZoomed[axis] && last.ranges[axis]) layout[axis].range = last.ranges[axis];
    ranges[axis] = layout[axis].range;
  }
  el.pwLast = { uirevision: layout.uirevision, ranges };
}

function noteUserRanges(el, change) {
  for (const axis of ["xaxis", "yaxis"]) {
    if (`${axis}.range[0]` in change || `${axis}.range` in change) el.pwZoomed[axis] = true;
    if (`${axis}.autorange` in change) el.pwZoomed[axis] = false;
  }
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
