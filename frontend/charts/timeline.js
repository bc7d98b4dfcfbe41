// What the host page's time charts share (issue 21): one time range for all of them, relative
// (`?range=6h`) or absolute (`?from=<ISO>&to=<ISO>`), picked in one bar and kept in the URL;
// a zoom on one chart applied to the others, and one crosshair: hovering a time on one chart
// draws the same time on all of them; event marks on every series (their sources are in
// marks.js: NVLink down/up as stored, maintenance windows, job start and end); and CSV export
// of any chart's series.

import { esc, h } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { OKABE_ITO } from "../shared/palette.js";
import { sourceColour } from "./marks.js";
import { onPlotly, plotly } from "./plot.js";

export const RANGES = { "1h": 3600, "6h": 6 * 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400 };
export const DEFAULT_RANGE = "6h";

const iso = (t) => new Date(t).toISOString();
const valid = (text) => Boolean(text) && !Number.isNaN(Date.parse(text));

/** {since, until, absolute}: `from`/`to` when both parse, else the last `range` (its end
 * rounded up to the minute, so a minute of refreshes asks the same URL and gets a 304). */
export function windowOf(params) {
  if (valid(params.from) && valid(params.to) && Date.parse(params.from) < Date.parse(params.to)) {
    return { since: iso(params.from), until: iso(params.to), absolute: true };
  }
  const until = Math.ceil(Date.now() / 60000) * 60000;
  const span = (RANGES[params.range] || RANGES[DEFAULT_RANGE]) * 1000;
  return { since: iso(until - span), until: iso(until), absolute: false };
}

/** The zoom kept in the URL (`zoom=<ISO>~<ISO>`, set by a drag on any time chart): [from,
 * to] when both parse and from < to, else null. */
export function zoomOf(params) {
  const [a, b] = String(params.zoom || "").split("~");
  return valid(a) && valid(b) && Date.parse(a) < Date.parse(b) ? [iso(a), iso(b)] : null;
}

/** One line per range parameter the page could not follow (issue 40: `from=21:00Z` was
 * dropped without a word while the charts ran to now). */
export function rangeNotices(params) {
  const lines = [];
  const fallback = `showing the last ${RANGES[params.range] ? params.range : DEFAULT_RANGE}`;
  for (const key of ["from", "to"]) {
    if (params[key] && !valid(params[key])) {
      lines.push(`${key}=${params[key]} is not a date and time (write it as 2026-12-01T21:00Z); ${fallback}.`);
    }
  }
  if (valid(params.from) && valid(params.to) && Date.parse(params.from) >= Date.parse(params.to)) {
    lines.push(`from=${params.from} is not before to=${params.to}; ${fallback}.`);
  } else if (Boolean(params.from) !== Boolean(params.to) && (valid(params.from) || valid(params.to))) {
    lines.push(`A range needs both from= and to=; ${fallback}.`);
  }
  if (params.zoom && !zoomOf(params)) {
    lines.push(`zoom=${params.zoom} is not two times from~to (e.g. 2026-12-01T21:00Z~2026-12-01T22:00Z); not zoomed.`);
  }
  if (params.range && !RANGES[params.range]) {
    lines.push(`There is no range "${params.range}"; showing the last ${DEFAULT_RANGE} ` +
      `(ranges: ${Object.keys(RANGES).join(", ")}).`);
  }
  return lines;
}

const localInput = (isoText) => isoText.slice(0, 16); // "2026-12-01T21:05" (UTC, as shown)

/** The range bar: relative buttons, and from/to (UTC) for an absolute range. */
export function rangeBar(params, onChange) {
  const w = windowOf(params);
  const current = w.absolute ? null : (RANGES[params.range] ? params.range : DEFAULT_RANGE);
  const from = h("input", { type: "datetime-local", id: "range-from", "aria-label": "From (UTC)",
    value: localInput(w.since) });
  const to = h("input", { type: "datetime-local", id: "range-to", "aria-label": "To (UTC)",
    value: localInput(w.until) });
  const apply = h("button", { type: "button", id: "range-apply", on: { click: () => {
    if (!from.value || !to.value) return;
    onChange({ from: `${from.value}:00Z`, to: `${to.value}:00Z`, range: "" });
  } } }, "apply");
  return h("div", { class: "toolbar range-bar", role: "group", "aria-label": "Time range of the charts" },
    h("span", { class: "muted" }, "Time range"),
    h("span", { class: "toggles", role: "group", "aria-label": "Last" },
      Object.keys(RANGES).map((r) => h("button", { type: "button", class: "toggle", "data-range": r,
        "aria-pressed": String(r === current), on: { click: () => onChange({ range: r, from: "", to: "" }) } },
      r))),
    h("label", { class: "muted" }, "from ", from), h("label", { class: "muted" }, "to ", to), apply,
    h("span", { class: "muted" }, w.absolute ? `${fmt.time(w.since)} – ${fmt.time(w.until)} UTC` : "UTC, up to now"));
}

const MARK_COLOUR = { link: OKABE_ITO.vermillion, maintenance: OKABE_ITO.sky, job: OKABE_ITO.purple,
  xid: OKABE_ITO.orange };
const colourOf = (kind) => MARK_COLOUR[kind] || sourceColour(kind) || OKABE_ITO.grey;

function shortLabel(e) {
  if (e.kind === "job") return e.label.replace(/^job (\S+) start$/, "▶ $1").replace(/^job (\S+) end$/, "■ $1");
  if (e.kind === "maintenance") return "⚒ maintenance";
  if (e.kind === "xid") return `⚡ ${e.label.split(":")[0]}`;
  return e.label;
}

/** Point events of one kind and label that recur (an Xid every 30 s) as one band from the
 * first to the last with their count; spans (maintenance) and single events as they are. */
export function foldRepeats(events) {
  const groups = new Map();
  const out = [];
  for (const e of events) {
    if (e.end) {
      out.push(e);
      continue;
    }
    const key = `${e.kind}|${e.label}`;
    const g = groups.get(key);
    if (!g) groups.set(key, { ...e, first: e.at, last: e.at, count: e.count || 1, times: 1 });
    else Object.assign(g, { first: e.at < g.first ? e.at : g.first, last: e.at > g.last ? e.at : g.last,
      count: g.count + (e.count || 1), times: g.times + 1 });
  }
  for (const g of groups.values()) {
    out.push(g.times > 1 ? { ...g, at: g.first, end: g.last, band: true } : g);
  }
  return out;
}

const BAND_FILL = "rgba(86,180,233,0.08)";

function markShape(e, since, until) {
  const name = `event ${e.kind}`;
  if (!e.end) {
    return { type: "line", xref: "x", yref: "paper", x0: e.at, x1: e.at, y0: 0, y1: 1, name,
      line: { color: colourOf(e.kind), width: 1, dash: "dot" } };
  }
  const x0 = e.at < since ? since : e.at;
  const x1 = e.end > until ? until : e.end;
  return e.band
    ? { type: "rect", xref: "x", yref: "paper", x0, x1, y0: 0, y1: 1, name, layer: "below",
      fillcolor: colourOf(e.kind), opacity: 0.14, line: { color: colourOf(e.kind), width: 1 } }
    : { type: "rect", xref: "x", yref: "paper", x0, x1, y0: 0, y1: 1, fillcolor: BAND_FILL,
      line: { width: 0 }, layer: "below", name };
}

const LABEL_ROWS = 3;
// Which labels get a row first when they crowd: faults before jobs and maintenance.
const LABEL_PRIORITY = { link: 0, xid: 0, job: 2, maintenance: 3 };

const LABEL_CHAR_PX = 6.2; // a 9 px label's average character width, with room for glyphs
const LABEL_ROW_PX = 15; // a row of labels: a 9 px label's box is 13 px high

/** Rows for the labels (0 = right above the plot), the faults' first: a label goes in the
 * first row where it overlaps no other (each spans its text's width from its time, on a
 * plot `widthPx` wide), else it is left out (its mark and hover stay). */
function labelRows(marks, texts, since, until, widthPx) {
  const t0 = Date.parse(since);
  const perPx = (Date.parse(until) - t0) / Math.max(100, widthPx - 80); // ms per pixel of plot
  const placed = Array.from({ length: LABEL_ROWS }, () => []);
  const rows = Array(marks.length).fill(-1);
  const order = marks.map((e, i) => i).sort((a, b) =>
    (LABEL_PRIORITY[marks[a].kind] ?? 1) - (LABEL_PRIORITY[marks[b].kind] ?? 1) || a - b);
  for (const i of order) {
    const x0 = Math.max(t0, Date.parse(marks[i].at));
    const x1 = x0 + (texts[i].length * LABEL_CHAR_PX + 8) * perPx;
    const row = placed.findIndex((spans) => spans.every(([a, b]) => x1 <= a || x0 >= b));
    if (row >= 0) placed[row].push([x0, x1]);
    rows[i] = row;
  }
  return rows;
}

/** Plotly shapes and labels for `events` within [since, until]: repeats folded into bands
 * ("⚡ Xid 74 ×14"), labels stacked in up to three rows so none overprints another. */
export function eventMarks(events, since, until, widthPx = 600) {
  const inside = foldRepeats(events.filter((e) => e.at <= until && (e.end || e.at) >= since))
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  const shapes = inside.map((e) => markShape(e, since, until));
  const texts = inside.map((e) => shortLabel(e) + (e.band ? ` ×${e.count}` : ""));
  const rows = labelRows(inside, texts, since, until, widthPx);
  // Short labels above the plot (the hover has the whole): "↓ GPU3 link 16", "▶ 81240", "⚒".
  const labels = inside.flatMap((e, i) => (rows[i] < 0 ? [] : [{
    x: e.at < since ? since : e.at, xref: "x", y: 1, yref: "paper", yanchor: "bottom",
    yshift: rows[i] * LABEL_ROW_PX, xanchor: "left", showarrow: false, textangle: 0,
    text: esc(texts[i]),
    font: { size: 9, color: colourOf(e.kind) === OKABE_ITO.vermillion ? "#F07030" : "#d5dbe5" },
    hovertext: esc(e.band ? `${e.label} ×${e.count}, ${fmt.time(e.first)} – ${fmt.time(e.last)}`
      : `${e.label} at ${fmt.time(e.at)}`), name: `event ${e.kind}` }]));
  const top = 30 + LABEL_ROW_PX * Math.max(0, ...rows); // the margin the stacked labels need
  return { shapes, labels, top };
}

/** After a chart is drawn: an event label that still overprints another is hidden (its mark
 * and hover stay). `labelRows` placed them by an estimate of the plot's width and each
 * label's text; the chart drawn may be narrower (its column settled after the estimate, a
 * wider y-axis margin) or a label's glyphs wider. Faults keep their labels first. */
export async function hideOverprinted(el) {
  const annotations = el.layout?.annotations || [];
  const rank = (i) => {
    const kind = String(annotations[i]?.name || "").replace(/^event /, "");
    return annotations[i]?.name?.startsWith("event ") ? LABEL_PRIORITY[kind] ?? 1 : -1;
  };
  const boxes = [...el.querySelectorAll("g.annotation")]
    .map((g) => ({ i: Number(g.dataset.index), b: g.getBoundingClientRect() }))
    .filter(({ i, b }) => b.width > 0 && annotations[i]?.visible !== false)
    .sort((x, y) => rank(x.i) - rank(y.i) || x.i - y.i);
  const over = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1
    && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  const kept = [];
  const hide = {};
  for (const box of boxes) {
    if (kept.some((k) => over(k.b, box.b))) hide[`annotations[${box.i}].visible`] = false;
    else kept.push(box);
  }
  if (Object.keys(hide).length) await window.Plotly.relayout(el, hide);
}

/** The series of a Plotly chart as CSV: one row per point, "series,time,value". */
export function chartCsv(el) {
  const rows = [["series", "time", "value"]];
  for (const t of el.data || []) {
    if (!t.x || !t.y || t.name === "window" || t.showlegend === false && t.name === "min") continue;
    t.x.forEach((x, i) => { if (x !== null && t.y[i] !== null && t.y[i] !== undefined) rows.push([t.name, x, t.y[i]]); });
  }
  const cell = (v) => (/[",\n]/.test(String(v)) ? `"${String(v).replace(/"/g, '""')}"` : String(v));
  return rows.map((r) => r.map(cell).join(",")).join("\n") + "\n";
}

/** A "⤓ CSV: <what>" button that downloads `chart`'s series as `<name>.csv` (three buttons
 * side by side all said "CSV"). */
export function csvButton(chart, name, what) {
  return h("button", { type: "button", class: "csv", "data-chart": chart.id,
    title: `Download this chart's series as CSV`, on: { click: () => {
      const url = URL.createObjectURL(new Blob([chartCsv(chart)], { type: "text/csv" }));
      const a = h("a", { href: url, download: `${name()}.csv` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    } } }, h("span", { "aria-hidden": "true" }, "⤓ "), `CSV: ${what}`);
}

/** A zoom (drag) on one of `charts` sets the same time range on the others; a double-click
 * on one returns them all to the page's window. `onZoom([from, to] | null)` after each (the
 * page keeps it in its URL). */
export function linkZoom(chartsNow, onZoom = () => {}) {
  let applying = false;
  for (const el of chartsNow().filter((c) => c.on)) {
    onPlotly(el, "plotly_relayout", async (change) => {
      if (applying) return;
      const range = change["xaxis.range[0]"] ? [change["xaxis.range[0]"], change["xaxis.range[1]"]]
        : change["xaxis.range"] || null;
      const reset = change["xaxis.autorange"] === true;
      if (!range && !reset) return;
      applying = true;
      try {
        const Plotly = await plotly();
        await Promise.all(chartsNow().filter((c) => c !== el && c.data).map((c) => Plotly.relayout(c,
          reset ? { "xaxis.autorange": true } : { "xaxis.range": range })));
        onZoom(reset ? null : range);
      } finally {
        applying = false;
      }
    });
  }
}

/** The hovered chart's own crosshair: a vertical spike across it at the cursor. */
export const CROSSHAIR = { showspikes: true, spikemode: "across", spikesnap: "cursor", spikethickness: 1,
  spikedash: "dot", spikecolor: "#8a93a6" };

/** The time (ms) a Plotly hover event points at: the cursor's, or (`atPoint`, a chart that
 * hovers the closest marker, as the jobs chart does) the hovered point's own, which Plotly
 * reports once as the cursor enters its reach, a few pixels off it. */
function hoveredTime(event, atPoint = false) {
  const x = atPoint ? event?.points?.[0]?.x ?? event?.xvals?.[0]
    : event?.xvals?.[0] ?? event?.points?.[0]?.x;
  if (x === undefined || x === null) return null;
  const xa = event.points?.[0]?.xaxis;
  const ms = xa?.d2l ? xa.d2l(x) : Date.parse(x);
  return Number.isFinite(ms) ? ms : null;
}

/** Draw (or hide, `ms` null) the crosshair line of chart `el` at time `ms`: a thin element
 * over the plot area (no relayout, so it follows the mouse at no cost). */
function placeCrosshair(el, ms) {
  let line = el.querySelector(":scope > .xhair");
  const xa = el._fullLayout?.xaxis;
  const size = el._fullLayout?._size;
  const px = ms === null || !xa ? NaN : xa._offset + xa.l2p(ms);
  if (!Number.isFinite(px) || px < xa._offset || px > xa._offset + xa._length) {
    if (line) line.hidden = true;
    return;
  }
  if (!line) {
    line = h("span", { class: "xhair", "aria-hidden": "true" });
    el.append(line);
  }
  Object.assign(line.style, { left: `${px}px`, top: `${size.t}px`, height: `${size.h}px` });
  line.dataset.at = iso(ms);
  line.hidden = false;
}

/** One crosshair across `chartsNow()`: hovering a time on one draws it on every other. */
export function linkCrosshair(chartsNow) {
  for (const el of chartsNow().filter((c) => c.on)) {
    onPlotly(el, "plotly_hover", (event) => {
      const ms = hoveredTime(event, el.layout?.hovermode === "closest");
      for (const c of chartsNow()) if (c !== el && c._fullLayout) placeCrosshair(c, ms);
    });
    onPlotly(el, "plotly_unhover", () => {
      for (const c of chartsNow()) placeCrosshair(c, null);
    });
  }
}
