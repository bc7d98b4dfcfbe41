// Job: #/job/<id>, which GPUs a job held (the reports' job mapping: the Slurm prolog's files or
// the kubelet) and what went wrong on them while it ran, from GET /api/v1/jobs/{job}.
// Three small tables: the GPUs held (host, GPU, from, to), the alerts active on them during
// the job, and the verdicts, not healthy now, that began before it ended.

import { api } from "../shared/api.js";
import { h, replace } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { badge } from "../shared/palette.js";
import { href, hostHref } from "../shared/router.js";
import { jobSpans } from "../charts/job_marks.js";

export const jobHref = (job) => href("job", [job]);

function table(label, heads, rows, empty) {
  if (!rows.length) return h("p", { class: "muted" }, empty);
  return h("table", { class: "job-table", "aria-label": label },
    h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows));
}

const hostLink = (name) => h("a", { href: hostHref(name), class: "host" }, name);

function heldRows(job) {
  return job.held.map((s) => h("tr", { "data-host": s.host, "data-gpu": s.gpu },
    h("td", {}, hostLink(s.host)), h("td", {}, `GPU${s.gpu}`),
    h("td", {}, fmt.time(s.first_seen)), h("td", {}, fmt.time(s.last_seen)),
    h("td", {}, s.source.replace("_", " "))));
}

function alertRows(job) {
  return job.alerts.map((a) => h("tr", { "data-alert": a.id, "data-rule": a.rule },
    h("td", {}, hostLink(a.host)), h("td", {}, a.rule), h("td", {}, a.state),
    h("td", {}, fmt.time(a.active_since)),
    h("td", {}, a.resolved_at ? fmt.time(a.resolved_at) : "—"),
    h("td", {}, a.summary || "")));
}

const keyWords = (k) => [k.src !== undefined ? fmt.pair(k.src, k.dst) : null,
  k.gpu !== undefined ? `GPU${k.gpu}` : null, k.link !== undefined ? `link ${k.link}` : null,
  k.test || null].filter(Boolean).join(" ") || "host";

function verdictRows(job) {
  return job.verdicts.map((v) => h("tr", { "data-kind": v.kind },
    h("td", {}, hostLink(v.host)), h("td", {}, keyWords(v.key)),
    h("td", {}, badge(v.verdict, v.reason)), h("td", {}, fmt.time(v.since)),
    h("td", { class: "reason" }, v.reason)));
}

export function mount(root, route) {
  const id = route.args[0] || "";
  const head = h("div", { class: "page-head" });
  const held = h("section", { class: "panel table-wrap" });
  const wrong = h("section", { class: "panel table-wrap" });
  replace(root, head, held, wrong);
  let shown = null;

  function render(job) {
    const bad = job.alerts.length + job.verdicts.length;
    replace(head, h("h1", {}, "Job ", h("code", {}, job.job)),
      h("span", { class: "chip" }, `${job.held.length} GPU${job.held.length === 1 ? "" : "s"} ` +
        `on ${job.hosts.length} host${job.hosts.length === 1 ? "" : "s"}`),
      h("span", { class: "chip" }, `${fmt.time(job.first_seen)} – ${fmt.time(job.last_seen)}`),
      h("span", { class: `chip${bad ? " v-degraded" : ""}`, "data-problems": bad },
        bad ? `${bad} problem${bad === 1 ? "" : "s"} during the job` : "nothing went wrong"));
    replace(held, h("h2", {}, "GPUs held"), table("GPUs the job held",
      ["Host", "GPU", "From", "To", "Source"], heldRows(job), "no GPU"));
    replace(wrong, h("h2", {}, "What went wrong during it"),
      table("Alerts during the job", ["Host", "Alert", "State", "Since", "Resolved", "Summary"],
        alertRows(job), "No alert on its GPUs while it ran."),
      table("Verdicts during the job", ["Host", "Object", "Verdict", "Since", "Reason"],
        verdictRows(job), "No verdict on its GPUs is degraded or down."));
  }

  return {
    async refresh() {
      shown = await api.job(id);
      render(shown);
    },
    title: () => (shown ? `Job ${shown.job}` : "Job"),
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
