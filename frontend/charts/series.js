// One pair's history for one test, from GET /hosts/{host}/series: the measured line (mean per
// bucket, with its min..max band), the pair's baseline band (±3 MAD), the expected line from
// topology, contended samples marked (shown, never judged), failed transfers, and shaded
// periods when the pair was low or an alert fired; the jobs on its GPUs along the bottom.

import { esc } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { baseLayout, OKABE_ITO, THEME } from "../shared/palette.js";
import { emptyNote, windowTrace } from "./plot.js";
import { jobMarks } from "./job_marks.js";

const BAND_MADS = 3;

function measuredTraces(s) {
  const x = s.buckets.map((b) => b.start);
  const y = (key) => s.buckets.map((b) => fmt.axisValue(b[key], s.unit));
  const unit = fmt.axisUnit(s.unit);
  const hover = s.buckets.map((b) => `${esc(fmt.time(b.start))}<br>mean ${esc(fmt.value(b.mean, s.unit))}` +
    `<br>min ${esc(fmt.value(b.min, s.unit))} · max ${esc(fmt.value(b.max, s.unit))}<br>${b.count} samples`);
  return [
    { type: "scatter", mode: "lines", name: "min", x, y: y("min"), hoverinfo: "skip",
      line: { width: 0, color: OKABE_ITO.sky }, showlegend: false },
    { type: "scatter", mode: "lines", name: "min–max", x, y: y("max"), fill: "tonexty",
      fillcolor: "rgba(86,180,233,0.18)", line: { width: 0 }, hoverinfo: "skip" },
    { type: "scatter", mode: s.buckets.length > 60 ? "lines" : "lines+markers",
      name: `measured (${unit})`, x, y: y("mean"), hovertext: hover, hoverinfo: "text",
      line: { color: OKABE_ITO.sky, width: 2 }, marker: { size: 4 } },
  ];
}

function referenceTraces(s, x0, x1) {
  const traces = [];
  if (s.baseline) {
    const lo = fmt.axisValue(Math.max(0, s.baseline.value - BAND_MADS * s.baseline.spread), s.unit);
    const hi = fmt.axisValue(s.baseline.value + BAND_MADS * s.baseline.spread, s.unit);
    const text = `baseline ${esc(fmt.value(s.baseline.value, s.unit))} ± ${BAND_MADS} MAD ` +
      `(${s.baseline.n} samples)`;
    traces.push({ type: "scatter", mode: "lines", name: `baseline ±${BAND_MADS} MAD`,
      x: [x0, x1, x1, x0, x0], y: [lo, lo, hi, hi, lo], fill: "toself",
      fillcolor: "rgba(0,158,115,0.16)", line: { color: "rgba(0,158,115,0.6)", width: 1 },
      hoverinfo: "text", hovertext: text, hoveron: "fills" });
  }
  if (s.expected) {
    const y = fmt.axisValue(s.expected.value, s.unit);
    traces.push({ type: "scatter", mode: "lines", name: "expected", x: [x0, x1], y: [y, y],
      line: { color: OKABE_ITO.yellow, width: 1.5, dash: "dash" }, hoverinfo: "text",
      // The API gives the expectation of the topology as last reported, not one per bucket:
      // say so, so a flat line across a week is not read as a week of NV18.
      hovertext: `expected now ${esc(fmt.value(s.expected.value, s.unit))} (${esc(s.expected.basis)})` +
        "<br>from the topology as last reported; earlier buckets may have had other links" });
  }
  return traces;
}

function pointTraces(s) {
  const traces = [];
  if (s.contended.length) {
    traces.push({ type: "scatter", mode: "markers", name: "contended (not judged)",
      x: s.contended.map((p) => p.at), y: s.contended.map((p) => fmt.axisValue(p.value, s.unit)),
      marker: { symbol: "diamond-open", size: 9, color: OKABE_ITO.purple, line: { width: 2 } },
      hoverinfo: "text", hovertext: s.contended.map((p) => `${esc(fmt.time(p.at))}<br>contended: ` +
        `${esc(fmt.value(p.value, s.unit))}<br>${esc(fmt.bytes(p.foreign_bytes))} of other traffic`) });
  }
  if (s.failures.length) {
    traces.push({ type: "scatter", mode: "markers", name: "failed",
      x: s.failures.map((p) => p.at), y: s.failures.map(() => 0),
      marker: { symbol: "x", size: 10, color: OKABE_ITO.vermillion },
      hoverinfo: "text", hovertext: s.failures.map((p) => `${esc(fmt.time(p.at))}<br>failed: ${esc(p.error)}`) });
  }
  return traces;
}

/** periods: [{start, end|null, label, kind: "alert"|"low"}] -> shaded rectangles. */
function periodShapes(periods, until) {
  return periods.map((p) => ({
    type: "rect", xref: "x", yref: "paper", y0: 0, y1: 1, x0: p.start, x1: p.end || until,
    fillcolor: p.kind === "alert" ? "rgba(213,94,0,0.16)" : "rgba(230,159,0,0.10)",
    line: { width: 0 }, layer: "below",
  }));
}

/** Labels: the low run's at the top of the chart, alerts' at the bottom, so both read. */
function periodLabels(periods, since, until) {
  const middle = (Date.parse(since) + Date.parse(until)) / 2;
  return periods.map((p) => {
    const alert = p.kind === "alert";
    return {
      x: p.start, xref: "x", y: alert ? 0 : 1, yref: "paper", yanchor: alert ? "bottom" : "top",
      xanchor: Date.parse(p.start) > middle ? "right" : "left", showarrow: false,
      text: esc(p.label), bgcolor: "rgba(22,26,34,0.85)",
      font: { size: 10, color: alert ? OKABE_ITO.vermillion : OKABE_ITO.orange },
      hovertext: esc(`${p.label}: ${fmt.time(p.start)} – ${p.end ? fmt.time(p.end) : "now"}`),
    };
  });
}

export function seriesFigure(s, periods = []) {
  const x0 = s.since;
  const x1 = s.until;
  const jobs = jobMarks(s.jobs); // which job held the pair's GPUs (issue 24)
  const data = [windowTrace(x0, x1), ...referenceTraces(s, x0, x1), ...measuredTraces(s),
    ...pointTraces(s), ...jobs.traces];
  const annotations = [...periodLabels(periods, x0, x1), ...jobs.annotations];
  if (!s.buckets.length && !s.contended.length && !s.failures.length) {
    annotations.push(emptyNote("no samples of this pair and test in this range"));
  }
  const layout = baseLayout({
    height: 320, hovermode: "closest", shapes: periodShapes(periods, x1), annotations,
    margin: { l: 56, r: 12, t: 30, b: 40 },
    xaxis: { type: "date", title: { text: "UTC" } },
    yaxis: { title: { text: fmt.axisUnit(s.unit) }, rangemode: "tozero" },
    legend: { orientation: "h", y: 1.02, yanchor: "bottom", x: 0, xanchor: "left",
      font: { size: 10, color: THEME.text } },
  });
  layout.uirevision = `${s.src}-${s.dst}-${s.test}`;
  return { data, layout };
}
