// Job snapshots on the host page. Each job's prolog and epilog snapshot (taken by the Slurm
// hooks, GET /hosts/{host}/snapshots) is a pair of markers on a timeline over the page's time
// range, one row per job. Hovering a marker names the job, phase and time; clicking it (or a
// job's chip) shows what changed on the host during the job: the lines of
// GET /hosts/{host}/jobs/{job}/diff, the same lines `peerwatch snapshot --diff` prints.

import { api } from "../shared/api.js";
import { activatable, esc, h, replace } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { baseLayout, OKABE_ITO } from "../shared/palette.js";
import { draw, emptyNote, onPlotly, purge, windowTrace } from "../charts/plot.js";
import { CROSSHAIR } from "../charts/timeline.js";

const JOBS_SHOWN = 20;
const SEVERITY_CLASS = { critical: "v-down", warning: "v-degraded", info: "" };

/** Snapshots (newest first) -> [{job, prolog, epilog}], newest job first. */
export function jobsOf(snapshots) {
  const jobs = new Map();
  for (const s of snapshots) {
    if (!s.job_id || s.phase === "manual") continue;
    const job = jobs.get(s.job_id) || { job: s.job_id, prolog: null, epilog: null };
    job[s.phase] ||= s; // newest first: keep the newest of each phase
    jobs.set(s.job_id, job);
  }
  return [...jobs.values()];
}

function markerHover(s) {
  return `job ${esc(s.job_id)} ${esc(s.phase)}<br>${esc(fmt.time(s.taken_at))}<br>` +
    `${s.gpus} GPUs, ${s.links_down} NVLink port(s) down<br>click for what changed`;
}

/** Whether a job ran at some time in [since, until] (a running one: from its prolog on). */
const overlaps = (j, since, until) => (j.prolog?.taken_at ?? j.epilog.taken_at) <= until
  && (j.epilog?.taken_at ?? until) >= since;

/** The jobs of the page's window only, their spans clipped to it (issue 40: the chart ran
 * over every snapshot, whatever the range): its axis autoranges over the window, so the
 * page's zoom, kept by uirevision, is never overridden by a fixed range. */
function timelineFigure(jobs, since, until) {
  const shown = jobs.filter((j) => overlaps(j, since, until)).slice(0, JOBS_SHOWN).reverse();
  const spans = { x: [], y: [] };
  const points = { prolog: [], epilog: [] };
  const inside = (s) => s && s.taken_at >= since && s.taken_at <= until;
  for (const j of shown) {
    for (const phase of ["prolog", "epilog"]) if (inside(j[phase])) points[phase].push(j[phase]);
    if (j.prolog && j.epilog) {
      spans.x.push(j.prolog.taken_at < since ? since : j.prolog.taken_at,
        j.epilog.taken_at > until ? until : j.epilog.taken_at, null);
      spans.y.push(j.job, j.job, null);
    }
  }
  const marker = (phase, symbol, color) => ({
    type: "scatter", mode: "markers", name: phase, x: points[phase].map((s) => s.taken_at),
    y: points[phase].map((s) => s.job_id), customdata: points[phase].map((s) => s.job_id),
    hovertext: points[phase].map(markerHover), hoverinfo: "text",
    marker: { symbol, size: 11, color, line: { width: 1, color: "#161a22" } },
  });
  // the window trace sits on a job's row: on a category axis its usual y = 0 would add a row "0"
  const data = [{ ...windowTrace(since, until), y: shown.length ? [shown[0].job, shown[0].job] : [] },
    { type: "scatter", mode: "lines", name: "job", x: spans.x, y: spans.y, hoverinfo: "skip",
      line: { color: OKABE_ITO.sky, width: 3 }, showlegend: false },
    marker("prolog", "triangle-right", OKABE_ITO.green),
    marker("epilog", "square", OKABE_ITO.orange)];
  const layout = baseLayout({
    height: Math.max(140, 60 + 22 * shown.length), hovermode: "closest",
    margin: { l: 70, r: 12, t: 10, b: 36 },
    xaxis: { type: "date", title: { text: "UTC" }, ...CROSSHAIR },
    yaxis: { type: "category", title: { text: "job" } },
    legend: { orientation: "h", y: 1.02, yanchor: "bottom", x: 1, xanchor: "right" },
    annotations: shown.length ? [] : [emptyNote(jobs.length ? "no job ran in this range" : "no job snapshots of this host")],
  });
  layout.uirevision = "jobs";
  return { data, layout };
}

export function jobsPanel(host) {
  const el = {
    head: h("div", { class: "panel-head" }),
    chart: h("div", { class: "chart", id: "jobs-chart" }),
    chips: h("div", { class: "chips", id: "job-chips" }),
    diff: h("div", { id: "job-diff", "aria-live": "polite" }),
  };
  const section = h("section", { class: "panel", id: "jobs-panel", hidden: true },
    el.head, el.chart, el.chips, el.diff);
  let jobs = [];
  let selected = null;

  async function showDiff(job) {
    selected = job;
    for (const chip of el.chips.children) chip.setAttribute("aria-pressed", String(chip.dataset.job === job));
    let diff;
    try {
      diff = await api.jobDiff(host, job);
    } catch (error) {
      if (!error.status) throw error;
      replace(el.diff, h("p", { class: "muted" }, `job ${job}: ${error.detail}`));
      return;
    }
    if (selected !== job) return; // another job was picked meanwhile
    const title = h("h3", {}, `job ${job}: ${fmt.time(diff.before.taken_at)} – ` +
      `${fmt.time(diff.after.taken_at)}`);
    replace(el.diff, title, diff.changes.length
      ? h("ul", { class: "problem-list" }, diff.changes.map((c) => h("li",
        { class: SEVERITY_CLASS[c.severity] || "", "data-kind": c.kind },
        h("b", {}, c.severity.toUpperCase()), " ", c.text)))
      : h("p", { class: "muted" }, "nothing changed on the fabric during this job"));
  }

  return {
    el: section,
    chart: el.chart, // one of the page's time charts: linked zoom and crosshair
    async load() {
      try {
        jobs = jobsOf((await api.snapshots(host)).snapshots);
      } catch (error) {
        if (!error.status) throw error; // network failure or abort: the page's own error
        jobs = [];
      }
    },
    async render(window_) {
      section.hidden = !jobs.length;
      if (!jobs.length) return;
      replace(el.head, h("h2", {}, "Jobs"),
        h("span", { class: "muted" }, "prolog ▶ and epilog ■ snapshots · click a job for what changed"));
      replace(el.chips, jobs.slice(0, JOBS_SHOWN).map((j) => activatable(h("span",
        { class: "toggle", role: "button", "data-job": j.job, "aria-pressed": String(j.job === selected) },
        `job ${j.job}${j.epilog ? "" : " (running)"}`), () => showDiff(j.job))));
      const { data, layout } = timelineFigure(jobs, window_.since, window_.until);
      await draw(el.chart, data, layout);
      onPlotly(el.chart, "plotly_click", (event) => {
        const job = event.points?.[0]?.customdata;
        if (job) showDiff(job);
      });
    },
    /** Job starts and ends, as event marks for the other charts (timeline.js). */
    events: () => jobs.flatMap((j) => [
      j.prolog ? { at: j.prolog.taken_at, kind: "job", label: `job ${j.job} start` } : null,
      j.epilog ? { at: j.epilog.taken_at, kind: "job", label: `job ${j.job} end` } : null]).filter(Boolean),
    destroy() {
      purge(el.chart);
    },
  };
}
