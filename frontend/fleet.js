// Fleet: every host at a glance. A heat grid (one cell per host, worst first, still readable at
// 1000 hosts) above a sortable, filterable table. Filter and sort live in the URL.

import { api } from "./api.js";
import { h, replace } from "./dom.js";
import { peersPanel } from "./fleet_peers.js";
import * as fmt from "./format.js";
import { activeMaintenance, maintenanceTag } from "./maintenance.js";
import { drainMarks, drainTags } from "./drain.js";
import { domainsPanel } from "./domain.js";
import { VERDICTS, verdictOf } from "./palette.js";
import { hostBadge, shownVerdict as shown, worstFiringByHost } from "./severity.js";
import { href, hostHref, updateParams } from "./router.js";
import { sortableTable } from "./table.js";

// Hosts are coloured by their verdict made worse by their worst firing alert: the chips say so.
const CHIP_WORDS = { degraded: "degraded or warning", down: "down or critical" };
const VERDICT_FILTERS = ["healthy", "degraded", "down", "unknown", "stale"];
const TABLE_ROWS = 200; // drawn at first, worst first; the heat grid always shows every host

/** When the server last heard from the host, by its own clock (a probe's clock may be off). */
const heardAt = (host) => host.last_received_at || host.last_report_at;
const shownVerdict = (host) => shown(host.verdict, host.worst_alert, host.stale);

/** Worst first: down, degraded, stale, unknown, healthy; ties by alerts firing. */
function severity(host) {
  const shown = verdictOf(shownVerdict(host)).rank;
  return (host.stale ? 1.5 : shown) * 1000 + Math.min(999, host.alerts_firing);
}

/** The reason with its most specific part first: "GPU3: 2 NVLinks down; hgx8-01: 1 of 8 …". */
export function specificFirst(reason) {
  const parts = String(reason || "").split("; ");
  return parts.length > 1 ? [...parts.slice(1), parts[0]].join("; ") : reason;
}

function verdictCell(r) {
  return [hostBadge(r.verdict, r.reason, r.worst_alert, r.stale),
    r.stale ? h("span", { class: "tag stale" }, "◌ stale") : null, maintenanceTag(r.maintenance),
    ...drainTags(r.drain)];
}

function reasonCell(r) {
  const text = specificFirst(r.reason);
  if (!r.stale) {
    return [h("span", {}, text), r.since && r.verdict !== "healthy"
      ? h("span", { class: "since" }, ` — ${r.verdict} ${fmt.since(r.since)}`) : null];
  }
  return [h("b", {}, `last known at ${fmt.time(heardAt(r))}: `), text];
}

const COLUMNS = [
  { key: "verdict", label: "Verdict", value: severity, cell: verdictCell },
  { key: "host", label: "Host", value: (r) => r.host,
    cell: (r) => h("a", { href: hostHref(r.host), class: "host" }, r.host) },
  { key: "reason", label: "Reason", class: "reason wide", cell: reasonCell },
  { key: "gpus", label: "GPUs healthy", class: "num", value: (r) => r.gpus_healthy - r.gpus_total,
    title: "healthy / total GPUs", cell: gpusCell },
  { key: "ratio", label: "Worst pair", value: (r) => r.worst_pair?.ratio ?? null,
    title: "lowest measured/expected among the latest results", cell: worstPairCell },
  { key: "alerts", label: "Alerts", class: "num", value: (r) => r.alerts_firing,
    cell: (r) => (r.alerts_firing ? h("a", { class: "tag firing", href: href("alerts", [], { host: r.host }) },
      `● ${r.alerts_firing}`) : "0") },
  { key: "age", label: "Last report", class: "num", value: (r) => fmt.ageSeconds(heardAt(r)),
    cell: (r) => h("span", { title: `received ${fmt.time(heardAt(r))} (server clock)`,
      class: r.stale ? "stale-text" : null }, fmt.age(heardAt(r))) },
  { key: "fabric", label: "Fabric", value: (r) => r.fabric, cell: (r) => r.fabric },
];

function gpusCell(r) {
  const cls = r.gpus_healthy < r.gpus_total ? "short" : null;
  return h("span", { class: cls }, `${r.gpus_healthy} / ${r.gpus_total}`);
}

export function ratioBar(ratio) {
  const bar = h("span", { class: "bar" });
  bar.style.width = `${Math.round(Math.max(0, Math.min(1, ratio)) * 100)}%`;
  if (ratio < 0.7) bar.classList.add("low");
  else if (ratio < 0.9) bar.classList.add("mid");
  return h("span", { class: "ratio-bar", "aria-hidden": "true" }, bar);
}

function worstPairCell(r) {
  const w = r.worst_pair;
  if (!w) return h("span", { class: "muted" }, "no results");
  const link = h("a", { href: hostHref(r.host, { test: w.test, pair: `${w.src}-${w.dst}` }) },
    `${fmt.pair(w.src, w.dst)} ${w.test}`);
  return h("span", { class: "worst" }, ratioBar(w.ratio), h("b", {}, fmt.ratio(w.ratio)), " ", link);
}

function matches(host, query, verdicts) {
  if (verdicts.size) {
    const hit = verdicts.has(host.verdict) || (verdicts.has("stale") && host.stale);
    if (!hit) return false;
  }
  if (!query) return true;
  const hay = `${host.host} ${host.fabric} ${host.verdict} ${host.reason}`.toLowerCase();
  return query.toLowerCase().split(/\s+/).every((word) => hay.includes(word));
}

function summary(hosts) {
  const count = (pred) => hosts.filter(pred).length;
  const gpus = hosts.reduce((a, x) => a + x.gpus_total, 0);
  const healthy = hosts.reduce((a, x) => a + x.gpus_healthy, 0);
  const firing = hosts.reduce((a, x) => a + x.alerts_firing, 0);
  const chips = Object.keys(VERDICTS).map((v) =>
    h("span", { class: `chip v-${v}`, "data-verdict": v }, h("span", { class: "glyph" }, VERDICTS[v].glyph),
      ` ${count((x) => shownVerdict(x) === v)} ${CHIP_WORDS[v] || v}`));
  return [h("span", { class: "chip" }, h("b", {}, hosts.length), " hosts"), ...chips,
    h("span", { class: "chip" }, `◌ ${count((x) => x.stale)} stale`),
    h("span", { class: "chip" }, h("b", {}, `${healthy} / ${gpus}`), " GPUs healthy"),
    h("a", { class: `chip${firing ? " firing" : ""}`, href: "#/alerts" }, `● ${firing} alerts firing`)];
}

function heatCell(host) {
  const shown = shownVerdict(host);
  const v = verdictOf(shown);
  const label = `${host.host}: ${host.verdict}${host.stale ? `, stale since ${fmt.time(heardAt(host))}` : ""}. ${host.reason}`;
  return h("a", { class: `cell v-${VERDICTS[shown] ? shown : "unknown"}${host.stale ? " stale" : ""}`,
    href: hostHref(host.host), title: label, "aria-label": label },
  shown === "healthy" ? "" : (host.stale ? "◌" : v.glyph));
}

export function mount(root, route) {
  let hosts = [];
  let params = route.params;
  const search = h("input", { type: "search", placeholder: "filter: host, fabric, reason…",
    "aria-label": "Filter hosts", value: params.q || "", class: "filter" });
  search.addEventListener("input", () => updateParams({ q: search.value }));
  const toggles = VERDICT_FILTERS.map((v) => h("button", { type: "button", class: `toggle v-${v}`,
    "data-verdict": v, on: { click: () => toggleVerdict(v) } }, v));
  const chips = h("div", { class: "chips", "aria-label": "Fleet summary" });
  const grid = h("div", { class: "heat-grid", role: "list", "aria-label": "Hosts, worst first" });
  const count = h("span", { class: "muted" });
  const domains = h("section", { class: "panel domains-panel", hidden: true });
  const table = sortableTable({
    columns: COLUMNS, rowKey: (r) => r.host, label: "Hosts", limit: TABLE_ROWS,
    sort: { key: params.sort || "verdict", dir: params.dir || "desc" },
    onSort: (sort, dir) => updateParams({ sort, dir }),
    onActivate: (r) => { location.hash = hostHref(r.host); },
    rowClass: (r) => (r.stale ? "stale-row" : null),
  });
  table.el.dataset.skipTarget = "the hosts table";
  const peers = peersPanel();

  replace(root,
    h("div", { class: "page-head" }, h("h1", {}, "Fleet"), chips),
    h("section", { class: "panel" },
      h("div", { class: "toolbar" }, search, h("span", { class: "toggles", role: "group",
        "aria-label": "Show only" }, toggles), count),
      grid),
    domains,
    h("section", { class: "panel table-wrap" }, table.el),
    peers.el);

  function selectedVerdicts() {
    return new Set((params.v || "").split(",").filter(Boolean));
  }

  function toggleVerdict(v) {
    const set = selectedVerdicts();
    if (set.has(v)) set.delete(v);
    else set.add(v);
    updateParams({ v: [...set].join(",") });
  }

  function render() {
    const verdicts = selectedVerdicts();
    for (const t of toggles) t.setAttribute("aria-pressed", String(verdicts.has(t.dataset.verdict)));
    replace(chips, summary(hosts));
    const shown = hosts.filter((x) => matches(x, params.q, verdicts));
    count.textContent = shown.length === hosts.length ? `${hosts.length} hosts`
      : `${shown.length} of ${hosts.length} hosts`;
    table.setRows(shown);
    replace(grid, table.sortedRows().map(heatCell));
  }

  return {
    async refresh() {
      const [data, firing, maintenance, racks, drain] = await Promise.all([api.hosts(),
        api.alerts({ state: "firing" }).catch((error) => {
          if (error.name === "AbortError") throw error;
          return { alerts: [] }; // alerting down: the hosts' own verdicts still show
        }), activeMaintenance(), api.domains().then((d) => d.domains, (error) => {
          if (error.name === "AbortError") throw error;
          return []; // an older server without domains: the fleet still shows
        }), drainMarks()]);
      const worst = worstFiringByHost(firing.alerts);
      hosts = data.hosts.map((x) => ({ ...x, worst_alert: worst[x.host] ?? null,
        maintenance: maintenance?.get(x.host) ?? null, drain: drain?.get(x.host) ?? null }))
        .sort((a, b) => a.host.localeCompare(b.host));
      domains.hidden = !racks.length;
      replace(domains, domainsPanel(racks));
      render();
      await peers.refresh();
    },
    async update(next) {
      params = next.params;
      if (document.activeElement !== search) search.value = params.q || "";
      render();
    },
    destroy() {},
  };
}
