// The jobs on a pair's GPUs, as the series chart draws them: one span per job (from the
// series' per-GPU spans), a line along the bottom and its name at the start. The job page
// (views/job.js) links the same spans; the chart needs none of that page, so this sits with
// the charts.

import { esc } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { OKABE_ITO } from "../shared/palette.js";

/** A pair series' `jobs` (spans per GPU) -> one span per job: its first and last time seen. */
export function jobSpans(spans = []) {
  const jobs = new Map();
  for (const s of spans) {
    const j = jobs.get(s.job) || { job: s.job, start: s.first_seen, end: s.last_seen, gpus: [] };
    if (s.first_seen < j.start) j.start = s.first_seen;
    if (s.last_seen > j.end) j.end = s.last_seen;
    j.gpus.push(s.gpu);
    jobs.set(s.job, j);
  }
  return [...jobs.values()];
}

/** The series chart's hook: a line per job along the bottom, named on hover ("job 4711 on
 *  GPU0, GPU1") and at its start (the links to the jobs' pages are `jobLinks`, beside it). */
export function jobMarks(spans = []) {
  const jobs = jobSpans(spans);
  const traces = jobs.map((j) => ({
    type: "scatter", mode: "lines", name: `job ${j.job}`, showlegend: false,
    x: [j.start, j.end], y: [0, 0], line: { width: 6, color: OKABE_ITO.sky },
    hoverinfo: "text", hovertext: `job ${esc(j.job)} on ${j.gpus.map((g) => `GPU${g}`).join(", ")}` +
      `<br>${esc(fmt.time(j.start))} – ${esc(fmt.time(j.end))}`,
  }));
  const annotations = jobs.map((j) => ({
    x: j.start, xref: "x", y: 0, yref: "paper", yanchor: "bottom", xanchor: "left",
    showarrow: false, font: { size: 10, color: OKABE_ITO.sky },
    text: `job ${esc(j.job)}`,
  }));
  return { traces, annotations };
}
