// Fleet: every host at a glance. A heat grid (one cell per host, worst first, still readable at
// 1000 hosts) above a sortable, filterable table. Filter and sort live in the URL.

import { api, TESTS } from "../shared/api.js";
import { h, replace } from "../shared/dom.js";
import { peersPanel } from "../panels/fleet_peers.js";
import * as fmt from "../shared/format.js";
import { activeMaintenance, maintenanceTag } from "../panels/maintenance.js";
import { drainMarks, drainTags } from "../panels/drain.js";
import { domainsPanel } from "./domain.js";
import { networkSummary } from "./network.js";
import { VERDICTS, verdictOf } from "../shared/palette.js";
import { hostFaults, moreWords, topFault } from "../shared/faults.js";
import { MAX_HOSTS } from "./compare.js";
import { clockTag, hostBadge, maintenanceBadge, severityTag, SEVERITY_LOOK, shownVerdict as shown,
  worstFiringByHost } from "../shared/severity.js";
import { href, hostHref, updateParams } from "../shared/router.js";
import { sortableTable } from "../shared/table.js";

const VERDICT_FILTERS = ["healthy", "degraded", "down", "unknown", "stale"];
const TABLE_ROWS = 200; // drawn at first, worst first; the heat grid always shows every host
const SEVERITY_SCORE = { critical: 3, warning: 2, info: 0.5 };
const VERDICT_SCORE = { down: 3, degraded: 2, unknown: 1 };

/** When the server last heard from the host, by its own clock (a probe's clock may be off). */
const heardAt = (host) => host.last_received_at || host.last_report_at;
const shownVerdict = (host) => shown(host.verdict, host.stale, host.clock_note);

/**
 * Most urgent first (the table sorts this descending): hosts at fault before those in a
 * maintenance window before healthy ones; then severity (the worst firing alert, or what the
 * verdict amounts to: down = critical, degraded = warning, stale = below a warning); then the
 * top fault's scope (a GPU lost first); then its age (the oldest first).
 */
export function urgency(host) {
  const sev = Math.max(SEVERITY_SCORE[host.worst_alert] || 0,
    VERDICT_SCORE[shownVerdict(host)] || 0);
  const top = host.top?.fault;
  const tier = !sev && !top ? 0 : host.maintenance ? 1 : 2;
  const scope = top ? top.scope : 5;
  const ageMin = top?.start ? Math.min(99999, fmt.ageSeconds(top.start) / 60) : 0;
  return tier * 1e7 + sev * 1e6 + (5 - scope) * 1e5 + ageMin;
}

/** The reason with its most specific part first: "GPU3: 2 NVLinks down; hgx8-01: 1 of 8 …". */
export function specificFirst(reason) {
  const parts = String(reason || "").split("; ");
  return parts.length > 1 ? [...parts.slice(1), parts[0]].join("; ") : reason;
}

function verdictCell(r) {
  return h("span", { class: "states" }, hostBadge(r.verdict, r.reason, r.stale, r.clock_note),
    r.stale ? h("span", { class: "tag stale" }, "◌ stale") : clockTag(r.clock_note),
    severityTag(r.worst_alert), maintenanceBadge(r.maintenance),
    ...drainTags(r.drain));
}

/** The top fault in one line ("+N more" after it), its age; the whole reason on hover. */
function reasonCell(r) {
  const top = r.top;
  const known = r.stale ? h("b", {}, `last known at ${fmt.time(heardAt(r))}: `) : null;
  if (r.clock_note && !r.stale) {
    return h("span", { class: "top-fault clock-note", title: r.reason }, `◷ ${r.clock_note}`);
  }
  if (!top) return h("span", { class: "top-fault", title: r.reason }, known, r.reason, maintenanceTag(r.maintenance));
  const { fault, more } = top;
  const text = fault.href ? h("a", { href: fault.href }, fault.text) : h("span", {}, fault.text);
  return h("span", { class: `top-fault scope-${fault.scope}`, title: r.reason, "data-scope": fault.scope },
    known, text,
    more ? h("a", { class: "more", href: href("alerts", [], { host: r.host }),
      title: "every fault of this host", "data-hidden": top.hidden.join("|") }, moreWords(top)) : null,
    // the top fault's own start (its alert's), not the host's earlier state
    !r.stale && (fault.start || r.since) && r.verdict !== "healthy"
      ? h("span", { class: "since" }, ` — ${fmt.since(fault.start || r.since)}`) : null,
    maintenanceTag(r.maintenance));
}

const COLUMNS = [
  { key: "verdict", label: "Verdict", value: urgency, cell: verdictCell },
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
  { key: "fabric", label: "Fabric", class: "fabric", value: (r) => r.fabric,
    // "simulated:<wbr>hgx8": a narrow column breaks after the colon, not inside a word
    cell: (r) => r.fabric.split(":").flatMap((part, i) => (i ? [":", h("wbr"), part] : [part])) },
];

function gpusCell(r) {
  if (r.stale) { // unknown now: the last count is history, never a green "4 / 4"
    return h("span", { class: "stale-text", title: `last known at ${fmt.time(heardAt(r))}` },
      `? ${r.gpus_total} (last ${r.gpus_healthy} ok)`);
  }
  const cls = r.gpus_healthy < r.gpus_total ? "short" : null;
  return h("span", { class: cls }, `${r.gpus_healthy} / ${r.gpus_total}`);
}

/** A bar as long as `ratio`; grey when stale, and coloured by the ratio only when the host is
 * at fault (a healthy host's 0.84 is what its topology allows: no orange for it). */
export function ratioBar(ratio, stale = false, healthy = false) {
  const bar = h("span", { class: "bar" });
  bar.style.width = `${Math.round(Math.max(0, Math.min(1, ratio)) * 100)}%`;
  if (stale) bar.classList.add("stale");
  else if (healthy) return h("span", { class: "ratio-bar", "aria-hidden": "true" }, bar);
  else if (ratio < 0.7) bar.classList.add("low");
  else if (ratio < 0.9) bar.classList.add("mid");
  return h("span", { class: "ratio-bar", "aria-hidden": "true" }, bar);
}

function worstPairCell(r) {
  const w = r.worst_pair;
  if (!w) return h("span", { class: "muted" }, "no results");
  const link = h("a", { href: hostHref(r.host, { test: w.test, pair: `${w.src}-${w.dst}` }) },
    `${fmt.pair(w.src, w.dst)} ${w.test}`);
  return h("span", { class: `worst${r.stale ? " stale-text" : ""}` }, ratioBar(w.ratio, r.stale, r.verdict === "healthy"),
    h("b", {}, fmt.ratio(w.ratio)), " ", link);
}

function matches(host, query, verdicts) {
  if (verdicts.size) {
    // a host whose clock is off is filed under what it is shown as: unknown, not healthy
    const verdict = host.clock_note && !host.stale ? "unknown" : host.verdict;
    const hit = verdicts.has(verdict) || (verdicts.has("stale") && host.stale);
    if (!hit) return false;
  }
  if (!query) return true;
  const hay = `${host.host} ${host.fabric} ${host.verdict} ${host.reason}`.toLowerCase();
  return query.toLowerCase().split(/\s+/).every((word) => hay.includes(word));
}

/** A summary chip: coloured when its count says something, quiet at 0 (issue 40: "0 down"
 * in red on an empty fleet read as an alarm). */
function countChip(n, look, attrs, ...content) {
  return h("span", { ...attrs, class: n ? `chip ${look}` : "chip quiet", "data-count": n }, ...content);
}

function summary(hosts) {
  const count = (pred) => hosts.filter(pred).length;
  const fresh = hosts.filter((x) => !x.stale);
  const gpus = fresh.reduce((a, x) => a + x.gpus_total, 0);
  const healthy = fresh.reduce((a, x) => a + x.gpus_healthy, 0);
  const firing = hosts.reduce((a, x) => a + x.alerts_firing, 0);
  const chips = Object.keys(VERDICTS).map((v) => {
    const n = count((x) => shownVerdict(x) === v);
    return countChip(n, `v-${v}`, { "data-verdict": v }, h("span", { class: "glyph", "aria-hidden": "true" },
      VERDICTS[v].glyph), ` ${n} ${v}`);
  });
  const severities = ["critical", "warning"].map((s) => {
    const n = count((x) => x.worst_alert === s);
    return countChip(n, `sev-${s}`, { "data-severity": s },
      h("span", { class: "glyph", "aria-hidden": "true" }, SEVERITY_LOOK[s].glyph), ` ${n} with ${s} firing`);
  });
  return [h("span", { class: "chip" }, h("b", {}, hosts.length), " hosts"), ...chips,
    countChip(count((x) => x.stale), "", {}, `◌ ${count((x) => x.stale)} stale`), ...severities,
    countChip(count((x) => x.maintenance), "", {}, `⚒ ${count((x) => x.maintenance)} in maintenance`),
    h("span", { class: "chip", title: "GPUs of hosts that report (stale hosts are unknown)" },
      h("b", {}, `${healthy} / ${gpus}`), " GPUs healthy"),
    h("a", { class: `chip${firing ? " firing" : " quiet"}`, href: "#/alerts" }, `● ${firing} alerts firing`)];
}

/** "compare these 3": the hosts the filter shows (up to 8), one pair's history overlaid. */
function compareLink(shown) {
  if (shown.length < 2 || shown.length > MAX_HOSTS) return null;
  return [" · ", h("a", { href: href("compare", [], { hosts: shown.map((x) => x.host).join(","),
    test: TESTS[0], pair: "0-1" }), id: "compare-link" }, `compare these ${shown.length}`)];
}

/** What an empty fleet says: how to connect the first probe (README, docs/security.md). */
function firstProbe() {
  const server = location.origin;
  return h("section", { class: "panel first-probe", id: "first-probe" },
    h("h2", {}, "No host has reported yet"),
    h("p", {}, "Connect the first probe: issue its credential on this server, then start the agent on the GPU host."),
    h("pre", {}, h("code", {}, `peerwatch token issue --host <gpu-host> --out probe.token   # here, on the server\n` +
      `peerwatch probe --server ${server} --token-file probe.token   # on <gpu-host>`)),
    h("p", { class: "muted" }, "Its first report appears here within a minute; ",
      h("a", { href: "/docs" }, "the API"), " says what a report holds."));
}

function heatCell(host) {
  const shown = shownVerdict(host);
  const v = verdictOf(shown);
  const top = host.top ? ` ${host.top.fault.text}` : "";
  const label = `${host.host}: ${shown}${host.stale ? `, stale since ${fmt.time(heardAt(host))}` : ""}` +
    `${host.worst_alert ? `, ${host.worst_alert} alert firing` : ""}` +
    `${host.maintenance ? ", in maintenance" : ""}` +
    `${host.clock_note && !host.stale ? `, ${host.clock_note}` : ""}.${top || ` ${host.reason}`}`;
  return h("a", { class: `cell v-${VERDICTS[shown] ? shown : "unknown"}${host.stale ? " stale" : ""}` +
    `${host.maintenance ? " maint" : ""}`, href: hostHref(host.host), title: label, "aria-label": label },
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
  const grid = h("nav", { class: "heat-grid", "aria-label": "Hosts, worst first" });
  const count = h("span", { class: "muted" });
  const domains = h("section", { class: "panel domains-panel", hidden: true });
  const network = h("section", { class: "panel network-panel", hidden: true }); // "Network: ▲ 1 fault · …"
  const table = sortableTable({
    columns: COLUMNS, rowKey: (r) => r.host, label: "Hosts", limit: TABLE_ROWS,
    sort: { key: params.sort || "verdict", dir: params.dir || "desc" },
    onSort: (sort, dir) => updateParams({ sort, dir }),
    onActivate: (r) => { location.hash = hostHref(r.host); },
    rowClass: (r) => [r.stale ? "stale-row" : null, r.maintenance ? "maint-row" : null]
      .filter(Boolean).join(" ") || null,
  });
  table.el.dataset.skipTarget = "the hosts table";
  const peers = peersPanel();
  const empty = h("div");

  replace(root,
    h("div", { class: "page-head" }, h("h1", {}, "Fleet"), chips),
    h("section", { class: "panel" },
      h("div", { class: "toolbar" }, search, h("span", { class: "toggles", role: "group",
        "aria-label": "Show only" }, toggles), count),
      grid),
    network, domains, empty,
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
    replace(empty, hosts.length ? null : firstProbe());
    const shown = hosts.filter((x) => matches(x, params.q, verdicts));
    replace(count, shown.length === hosts.length ? `${hosts.length} hosts`
      : `${shown.length} of ${hosts.length} hosts`, compareLink(shown));
    table.setRows(shown);
    replace(grid, table.sortedRows().map(heatCell));
  }

  return {
    async refresh() {
      const [data, active, maintenance, racks, drain, net] = await Promise.all([api.hosts(),
        api.alerts({}).catch((error) => {
          if (error.name === "AbortError") throw error;
          return { alerts: [] }; // alerting down: the hosts' own verdicts still show
        }), activeMaintenance(), api.domains().then((d) => d.domains, (error) => {
          if (error.name === "AbortError") throw error;
          return []; // an older server without domains: the fleet still shows
        }), drainMarks(), networkSummary()]);
      const worst = worstFiringByHost(active.alerts);
      const byHost = new Map();
      for (const a of active.alerts) byHost.set(a.host, [...(byHost.get(a.host) || []), a]);
      hosts = data.hosts.map((x) => ({ ...x, worst_alert: worst[x.host] ?? null,
        maintenance: maintenance?.get(x.host) ?? null, drain: drain?.get(x.host) ?? null,
        top: topFault(hostFaults(x, byHost.get(x.host) || [])) }))
        .sort((a, b) => a.host.localeCompare(b.host));
      domains.hidden = !racks.length;
      replace(domains, domainsPanel(racks));
      network.hidden = !net;
      replace(network, net);
      render();
      await peers.refresh();
    },
    async update(next) {
      params = next.params;
      if (document.activeElement !== search) search.value = params.q || "";
      render();
    },
    title: () => {
      const n = (v) => hosts.filter((x) => shownVerdict(x) === v).length;
      return `Fleet · ${n("down")} down, ${n("degraded")} degraded, ${n("unknown")} unknown`;
    },
    destroy() {},
  };
}
