// Job: #/job/<id>, which GPUs a job held (the reports' job mapping: the Slurm prolog's files or
// the kubelet) and what went wrong on them while it ran, from the job's own evidence (issue 40):
// the diff of its prolog and epilog snapshots (GET /hosts/{host}/jobs/{job}/diff), the Xid/SXid
// events on its GPUs, the alerts active on them and the verdicts that began before it ended
// (GET /api/v1/jobs/{job}), in one timeline. "Nothing went wrong" only when every one of them
// was read and says so: an alert-free job whose diff shows a link going down is not all clear.

import { api } from "../shared/api.js";
import { h, replace } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { href, hostHref } from "../shared/router.js";
import { jobSpans } from "../charts/job_marks.js";
import { rollUp, where } from "../shared/event_rollup.js";
import { scrollBox } from "../shared/table.js";

export const jobHref = (job) => href("job", [job]);

const SEVERITY_CLASS = { critical: "v-down", warning: "v-degraded" };
const VERDICT_SEVERITY = { down: "critical", degraded: "warning" };
const isProblem = (severity) => severity === "critical" || severity === "warning";

function table(label, heads, rows, empty) {
  if (!rows.length) return h("p", { class: "muted" }, empty);
  return scrollBox(`${label}, scrolls sideways`, h("table", { class: "job-table", "aria-label": label },
    h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows)));
}

const hostLink = (name) => h("a", { href: hostHref(name), class: "host" }, name);

function heldRows(job) {
  return job.held.map((s) => h("tr", { "data-host": s.host, "data-gpu": s.gpu },
    h("td", {}, hostLink(s.host)), h("td", {}, `GPU${s.gpu}`),
    h("td", {}, fmt.time(s.first_seen)), h("td", {}, fmt.time(s.last_seen)),
    h("td", {}, s.source.replace("_", " "))));
}

const keyWords = (k) => [k.src !== undefined ? fmt.pair(k.src, k.dst) : null,
  k.gpu !== undefined ? `GPU${k.gpu}` : null, k.link !== undefined ? `link ${k.link}` : null,
  k.test || null].filter(Boolean).join(" ") || "host";

/** Each piece of evidence as timeline entries: {at, host, source, what, severity, detail}. */
const fromDiff = (d) => d.changes.map((c) => ({ at: d.after.taken_at, host: d.host,
  source: "snapshot diff", what: c.text, severity: c.severity, detail: `${c.kind}, prolog → epilog` }));

const fromEvents = (host, events) => rollUp(events).map((e) => ({ at: e.first, host,
  source: "event", severity: e.severity,
  what: `${e.label} ${where(e)}${e.count > 1 ? ` ×${e.count}` : ""}: ${e.meaning}`,
  detail: e.count > 1 ? `${fmt.time(e.first)} – ${fmt.time(e.last)}` : e.action }));

const fromAlerts = (job) => job.alerts.map((a) => ({ at: a.active_since, host: a.host,
  source: "alert", severity: a.labels?.severity || "warning", what: `${a.rule} (${a.state})`,
  detail: [a.summary, a.resolved_at ? `resolved ${fmt.time(a.resolved_at)}` : null]
    .filter(Boolean).join(" · ") }));

const fromVerdicts = (job) => job.verdicts.map((v) => ({ at: v.since, host: v.host,
  source: "verdict", severity: VERDICT_SEVERITY[v.verdict] || "warning",
  what: `${keyWords(v.key)} ${v.verdict}`, detail: v.reason }));

function timelineRow(t) {
  return h("tr", { class: SEVERITY_CLASS[t.severity] || "", "data-source": t.source,
    "data-severity": t.severity },
  h("td", {}, fmt.time(t.at)), h("td", {}, hostLink(t.host)), h("td", {}, t.source),
  h("td", {}, t.severity), h("td", {}, h("b", {}, t.what)), h("td", { class: "reason" }, t.detail));
}

/** One host's diff and events while the job ran; `missing` says what could not be read. */
async function hostEvidence(job, host) {
  const gpus = new Set(job.held.filter((s) => s.host === host).map((s) => s.gpu));
  const [snapshots, events] = await Promise.all([api.snapshots(host),
    api.events(host, { since: job.first_seen, until: job.last_seen })]);
  // the diff only where both ends were taken (a running job has no epilog yet): no 404 asked for
  const phases = new Set(snapshots.snapshots.filter((s) => s.job_id === job.job).map((s) => s.phase));
  const diff = phases.has("prolog") && phases.has("epilog") ? await api.jobDiff(host, job.job)
    : { missing: `no prolog and epilog snapshots of ${host} to compare` };
  const onItsGpus = events.events.filter((e) => e.gpu === null || e.gpu === undefined || gpus.has(e.gpu));
  return { host, diff: diff.missing ? null : diff, missing: diff.missing || null,
    entries: [...(diff.missing ? [] : fromDiff(diff)), ...fromEvents(host, onItsGpus)] };
}

/** The chip: problems counted from every source; all clear only when all were read. */
function verdictChip(entries, missing) {
  const bad = entries.filter((t) => isProblem(t.severity));
  const text = bad.length ? `${bad.length} problem${bad.length === 1 ? "" : "s"} during the job`
    : missing.length ? "no problem seen, but not all evidence could be read" : "nothing went wrong";
  return h("span", { class: `chip${bad.length ? " v-degraded" : ""}`, id: "job-verdict",
    "data-problems": bad.length, "data-complete": String(!missing.length) }, text);
}

export function mount(root, route) {
  const id = route.args[0] || "";
  const head = h("div", { class: "page-head" });
  const held = h("section", { class: "panel table-wrap" });
  const wrong = h("section", { class: "panel table-wrap", id: "job-timeline" });
  replace(root, head, held, wrong);
  let shown = null;

  function render(job, evidence) {
    const entries = [...evidence.flatMap((e) => e.entries), ...fromAlerts(job), ...fromVerdicts(job)]
      .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    const missing = evidence.filter((e) => e.missing).map((e) => e.missing);
    replace(head, h("h1", {}, "Job ", h("code", {}, job.job)),
      h("span", { class: "chip" }, `${job.held.length} GPU${job.held.length === 1 ? "" : "s"} ` +
        `on ${job.hosts.length} host${job.hosts.length === 1 ? "" : "s"}`),
      h("span", { class: "chip" }, `${fmt.time(job.first_seen)} – ${fmt.time(job.last_seen)}`),
      verdictChip(entries, missing));
    replace(held, h("h2", {}, "GPUs held"), table("GPUs the job held",
      ["Host", "GPU", "From", "To", "Source"], heldRows(job), "no GPU"));
    replace(wrong, h("h2", {}, "What happened on its GPUs while it ran"),
      h("p", { class: "muted" }, "The snapshots' diff, Xid/SXid events, alerts and verdicts, oldest first."),
      missing.map((m) => h("p", { class: "notice", role: "status" }, `⚠ ${m}`)),
      table("Job timeline", ["Time", "Host", "From", "Severity", "What", "Detail"],
        entries.map(timelineRow), "Nothing on its GPUs while it ran: no change in its snapshots, " +
        "no event, alert or degraded verdict."));
  }

  return {
    async refresh() {
      const job = await api.job(id);
      const evidence = await Promise.all(job.hosts.map((host) => hostEvidence(job, host)));
      shown = job;
      render(job, evidence);
    },
    title: () => (shown ? `Job ${shown.job}` : `Job ${id}`),
    async update() {},
    destroy() {},
  };
}

/** The pair panel's hook: "Jobs on these GPUs: job 4711, job 4712", each a link to its page. */
export function jobLinks(spans = []) {
  const jobs = jobSpans(spans);
  if (!jobs.length) return [];
  const links = jobs.flatMap((j, i) => [i ? ", " : "",
    h("a", { href: jobHref(j.job), class: "job-link", "data-job": j.job }, `job ${j.job}`)]);
  return [h("span", { class: "pair-jobs" }, " Jobs on these GPUs in this range: ", links)];
}
