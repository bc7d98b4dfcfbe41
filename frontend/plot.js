// Drawing with plotly.js. It is loaded when a page first draws a chart, from the versioned
// URL index.html names (/static/vendor/plotly-<version>.min.js, prefetched there): 4.8 MB of
// script the fleet page never needs. `Plotly.react` redraws in place, and every layout
// carries `uirevision`, so a refresh keeps the user's zoom and legend choices. A chart
// element gets data-ready="true" once drawn.

import { PLOT_CONFIG } from "./palette.js";

let loading = null;

/** window.Plotly, loading plotly.js first if no page has needed it yet. */
export function plotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  loading ||= new Promise((resolve, reject) => {
    const src = document.querySelector('meta[name="peerwatch-plotly"]').content;
    const script = document.createElement("script");
    script.src = src;
    script.addEventListener("load", () => resolve(window.Plotly));
    script.addEventListener("error", () => {
      loading = null;
      reject(new Error(`could not load plotly.js from ${src}`));
    });
    document.head.append(script);
  });
  return loading;
}

export async function draw(el, data, layout, config = PLOT_CONFIG) {
  keepUserRanges(el, layout);
  const Plotly = await plotly();
  await Plotly.react(el, data, layout, config);
  el.dataset.ready = "true";
  return el;
}

// uirevision keeps a user's zoom only while the code's own value for that range stays the
// same, but our time axes move forward with every refresh. So when the range on screen is
// no longer the one we drew (the user zoomed or panned), hand Plotly the range we drew last
// time again, and it keeps the user's. A double-click (autorange) gives the axis back to us.
// Judged from the chart's state at draw time, so a zoom during a refresh is not lost.
function keepUserRanges(el, layout) {
  const last = el.pwLast;
  const sameView = last && last.uirevision === layout.uirevision;
  const ranges = {};
  for (const axis of ["xaxis", "yaxis"]) {
    if (!layout[axis]?.range) continue;
    const shown = el.layout?.[axis];
    const drawn = sameView ? last.ranges[axis] : null;
    const moved = drawn && shown && !shown.autorange && !sameRange(shown.range, drawn);
    if (moved) layout[axis].range = [...drawn];
    ranges[axis] = [...layout[axis].range]; // a copy: Plotly edits the range array in place
  }
  el.pwLast = { uirevision: layout.uirevision, ranges };
}

function sameRange(a, b) {
  return Array.isArray(a) && Array.isArray(b) && a[0] === b[0] && a[1] === b[1];
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
