// Placement: ask GET /scheduler/placement for k GPUs of a host with a pattern; the chosen set
// is highlighted on the host's topology graph, with its predicted bandwidth, the runner-ups
// and every GPU left out with the reason. The form lives in the URL
// (#/placement?host=..&k=4&pattern=ring) so an answer can be shared.

import { api } from "../shared/api.js";
import { h, replace } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { draw, plotly, purge } from "../charts/plot.js";
import { hostHref, updateParams } from "../shared/router.js";
import { scrollBox, sortableTable } from "../shared/table.js";
import { topologyFigure } from "../charts/topology.js";

const PATTERNS = { ring: "ring all-reduce", all_to_all: "all-to-all" };
const DEFAULT_K = 4;

function pairText(p) {
  return p ? fmt.pair(p[0], p[1]) : "–";
}

function setText(gpus, pattern) {
  return gpus.map((g) => `GPU${g}`).join(pattern === "ring" ? " → " : ", ") +
    (pattern === "ring" && gpus.length > 2 ? ` → GPU${gpus[0]}` : "");
}

/** Host choices: those that can take k GPUs now first, then the others with the reason. */
function hostOptions(fit, selected) {
  const able = fit.hosts.map((x) => h("option", { value: x.host, selected: x.host === selected },
    `${x.host} (${x.healthy_gpus.length} of ${x.gpus_total} healthy)`));
  const others = Object.entries(fit.left_out).map(([name, why]) =>
    h("option", { value: name, selected: name === selected }, `${name} — ${why}`));
  return [able.length ? h("optgroup", { label: `can take ${fit.min_healthy_gpus} GPUs now` }, able) : null,
    others.length ? h("optgroup", { label: "cannot now" }, others) : null];
}

function form(params, fit, onSubmit) {
  const host = h("select", { name: "host", id: "pl-host", required: true }, hostOptions(fit, params.host));
  const k = h("input", { name: "k", id: "pl-k", type: "number", min: 1, max: 1024,
    value: params.k || String(DEFAULT_K), required: true });
  const pattern = h("select", { name: "pattern", id: "pl-pattern" },
    Object.entries(PATTERNS).map(([v, label]) => h("option", { value: v, selected: v === (params.pattern || "ring") }, label)));
  const el = h("form", { class: "toolbar placement-form" },
    h("label", { for: "pl-host" }, "Host"), host, h("label", { for: "pl-k" }, "GPUs"), k,
    h("label", { for: "pl-pattern" }, "Pattern"), pattern,
    h("button", { type: "submit", class: "primary" }, "Place"));
  el.addEventListener("submit", (event) => {
    event.preventDefault();
    onSubmit({ host: host.value, k: k.value, pattern: pattern.value });
  });
  return el;
}

function answerFacts(p) {
  const rows = [
    ["Chosen", setText(p.gpus, p.pattern)],
    ["Predicted", `${fmt.bandwidth(p.predicted_bps)} ${p.pattern === "ring" ? "bus bandwidth" : "per GPU"}`],
    ["Weakest pair", pairText(p.weakest_pair)],
    ["CUDA_VISIBLE_DEVICES", p.cuda_visible_devices],
    ["by UUID", p.cuda_visible_devices_uuid || "–"],
    ["Model", p.model],
    ["Search", p.exact ? "exact (every set tried)" : "greedy (too many sets to try all)"],
    ["Measured", fmt.time(p.measured_at)],
  ];
  return h("dl", { class: "facts-grid" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", { class: k.startsWith("CUDA") || k === "by UUID" ? "mono" : null }, v)]));
}

function runnerUps(p) {
  const t = sortableTable({ label: "Runner-up sets", rowKey: (r) => r.gpus.join(","), columns: [
    { key: "set", label: "Set", cell: (r) => setText(r.gpus, p.pattern) },
    { key: "bw", label: "Predicted", class: "num", value: (r) => r.predicted_bps, cell: (r) => fmt.bandwidth(r.predicted_bps) },
    { key: "weak", label: "Weakest pair", cell: (r) => pairText(r.weakest_pair) },
    { key: "est", label: "Estimated pairs", cell: (r) => r.estimated_pairs.map(pairText).join(", ") || "none" },
  ] });
  t.setRows(p.runner_ups);
  return scrollBox("Runner-up sets, scrolls sideways", t.el);
}

function excluded(p) {
  const t = sortableTable({ label: "GPUs left out", rowKey: (r) => String(r.gpu), sort: { key: "gpu" }, columns: [
    { key: "gpu", label: "GPU", value: (r) => r.gpu, cell: (r) => `GPU${r.gpu}` },
    { key: "healthy", label: "Healthy", value: (r) => (r.healthy ? 0 : 1),
      cell: (r) => (r.healthy ? "✓ yes" : h("span", { class: "warn" }, "✕ no")) },
    { key: "reason", label: "Why left out", class: "reason", cell: (r) => r.reason },
  ] });
  t.setRows(p.excluded);
  return scrollBox("GPUs left out, scrolls sideways", t.el);
}

export function mount(root, route) {
  plotly().catch(() => {}); // beside the API calls, not after them (draw reports a failure)
  let params = route.params;
  const formSlot = h("div");
  const answer = h("div", { class: "placement-answer" });
  const graph = h("div", { class: "chart", id: "placement-chart" });
  replace(root, h("div", { class: "page-head" }, h("h1", {}, "Placement"),
    h("p", { class: "muted" }, "The best k healthy GPUs of a host for a collective, from what was measured.")),
  h("section", { class: "panel" }, formSlot),
  h("div", { class: "two-col" }, h("section", { class: "panel" }, h("div", { class: "panel-head" },
    h("h2", {}, "Chosen set on the topology")), graph), h("section", { class: "panel" }, answer)));

  /** The placement and the host's topology, asked for together; a refusal is shown. */
  async function ask(host) {
    const placed = api.placement({ host, gpus: params.k || DEFAULT_K, pattern: params.pattern || "ring" })
      .catch((error) => {
        if (!error.status) throw error;
        replace(answer, h("p", { class: "error-box", role: "alert" }, error.detail));
        return null;
      });
    return Promise.all([api.topology(host), placed]);
  }

  async function load() {
    // A bare #/placement opens on the first host that can take the default k GPUs now; a
    // named host is asked at once, beside the list of hosts.
    const fitting = api.schedulerHosts(Number(params.k) || DEFAULT_K);
    const asked = params.host ? ask(params.host) : null;
    const fit = await fitting;
    const host = params.host || fit.hosts[0]?.host || Object.keys(fit.left_out)[0];
    if (!formSlot.contains(document.activeElement)) { // never rebuild under the user's hands
      replace(formSlot, form({ ...params, host }, fit, (next) => updateParams(next, { push: true })));
    }
    if (!host) {
      replace(answer, h("p", { class: "muted" }, "No hosts have reported yet."));
      return;
    }
    params = { ...params, host };
    const [topo, p] = await (asked || ask(host));
    const chosen = p ? new Set(p.gpus.map((g) => `gpu${g}`)) : new Set();
    const order = p?.pattern === "ring" ? new Map(p.gpus.map((g, i) => [`gpu${g}`, i + 1])) : null;
    const fig = topologyFigure(topo, { highlight: p ? chosen : null, order, height: 440 });
    fig.layout.uirevision = `${params.host}`;
    await draw(graph, fig.data, fig.layout);
    if (!p) return;
    replace(answer,
      h("div", { class: "panel-head" }, h("h2", {}, `${p.k} GPUs, ${PATTERNS[p.pattern] || p.pattern}`),
        h("a", { href: hostHref(p.host) }, `open ${p.host}`)),
      h("p", { class: "big" }, fmt.bandwidth(p.predicted_bps)),
      answerFacts(p),
      p.warnings.length ? h("ul", { class: "warnings" }, p.warnings.map((w) => h("li", {}, `⚠ ${w}`))) : null,
      h("h3", {}, "Runner-ups"), runnerUps(p), h("h3", {}, "Left out"), excluded(p));
  }

  return {
    refresh: load,
    async update(next) {
      params = next.params;
      await load();
    },
    title: () => `Placement${params.host ? ` · ${params.host}` : ""}`,
    destroy() { purge(graph); },
  };
}
