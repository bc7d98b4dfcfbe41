// Alerts: what fired, what is pending and what resolved recently, with the reason in words and
// a link to the pair or link it concerns. The state filter lives in the URL (#/alerts?state=).

import { api } from "./api.js";
import { h, replace } from "./dom.js";
import * as fmt from "./format.js";
import { hostHref, updateParams } from "./router.js";
import { sortableTable } from "./table.js";

// "active" is the API's default (pending and firing); "all" adds the resolved ones.
const STATES = ["active", "firing", "pending", "resolved", "all"];
const STATE_LOOK = {
  firing: { glyph: "●", cls: "v-down" }, pending: { glyph: "◔", cls: "v-degraded" },
  resolved: { glyph: "✓", cls: "v-healthy" }, inactive: { glyph: "○", cls: "v-unknown" },
};
const SEVERITY_RANK = { critical: 0, warning: 1, info: 2 };

/** Where an alert points: the host page with its pair/test (or GPU) selected. */
export function alertTarget(a) {
  const l = a.labels || {};
  const params = {};
  if (l.gpu !== undefined && l.peer_gpu !== undefined) params.pair = `${l.gpu}-${l.peer_gpu}`;
  if (l.test) params.test = l.test;
  else if (l.gpu !== undefined) params.gpu = l.gpu;
  return hostHref(a.host || l.host || "", params);
}

export function subject(a) {
  const l = a.labels || {};
  if (l.gpu !== undefined && l.peer_gpu !== undefined) {
    return `${fmt.pair(l.gpu, l.peer_gpu)}${l.test ? ` ${l.test}` : ""}`;
  }
  if (l.gpu !== undefined && l.link !== undefined) return `GPU${l.gpu} link ${l.link}`;
  if (l.gpu !== undefined) return `GPU${l.gpu}`;
  return "host";
}

const text = (a, key) => a.annotations?.[key] ?? "";
const since = (a) => a.fired_at || a.active_since;

const COLUMNS = [
  { key: "state", label: "State", value: (a) => a.state, cell: (a) => {
    const look = STATE_LOOK[a.state] || STATE_LOOK.inactive;
    return h("span", { class: `badge ${look.cls}` }, h("span", { class: "glyph" }, look.glyph), ` ${a.state}`);
  } },
  { key: "severity", label: "Severity", value: (a) => SEVERITY_RANK[a.severity] ?? 9,
    cell: (a) => h("span", { class: a.severity === "critical" ? "warn" : null }, a.severity || "–") },
  { key: "name", label: "Alert", value: (a) => a.alertname, cell: (a) => [h("b", {}, a.alertname),
    a.acknowledged ? h("span", { class: "tag", title: `acknowledged by ${a.acknowledged.by}` }, "ack") : null,
    a.silenced_by?.length ? h("span", { class: "tag" }, "silenced") : null,
    a.held ? h("span", { class: "tag maintenance", title: `${a.held}: shown, not paged` },
      a.in_maintenance ? "in maintenance" : "settling") : null] },
  { key: "host", label: "Host", value: (a) => a.host,
    cell: (a) => (a.host ? h("a", { class: "host", href: hostHref(a.host) }, a.host) : "–") },
  { key: "subject", label: "Concerns", value: subject, cell: (a) => h("a", { href: alertTarget(a) }, subject(a)) },
  { key: "reason", label: "Reason", class: "reason", cell: (a) => [h("div", {}, text(a, "summary")),
    h("div", { class: "muted" }, text(a, "description"))] },
  { key: "since", label: "Since", class: "num", value: (a) => -Date.parse(since(a)),
    cell: (a) => h("span", { title: fmt.time(since(a)) }, fmt.age(since(a))) },
  { key: "ended", label: "Resolved", class: "num", value: (a) => a.resolved_at ?? null,
    cell: (a) => (a.resolved_at ? h("span", { title: fmt.time(a.resolved_at) }, `${fmt.age(a.resolved_at)} ago`) : "–") },
];

export function mount(root, route) {
  let params = route.params;
  const toggles = STATES.map((s) => h("button", { type: "button", class: "toggle", "data-state": s,
    on: { click: () => updateParams({ state: s }) } }, s));
  const count = h("span", { class: "muted" });
  const hostFilter = h("span");
  const table = sortableTable({ columns: COLUMNS, rowKey: (a) => String(a.id), label: "Alerts",
    sort: { key: "severity", dir: "asc" }, onActivate: (a) => { location.hash = alertTarget(a); } });
  replace(root, h("div", { class: "page-head" }, h("h1", {}, "Alerts")),
    h("section", { class: "panel table-wrap" }, h("div", { class: "toolbar" },
      h("span", { class: "toggles", role: "group", "aria-label": "State" }, toggles), hostFilter, count),
    table.el));

  const state = () => (STATES.includes(params.state) ? params.state : "active");

  async function fetchAlerts() {
    const host = params.host || null;
    if (state() === "active") return (await api.alerts({ host })).alerts;
    if (state() !== "all") return (await api.alerts({ state: state(), host })).alerts;
    const [active, resolved] = await Promise.all([api.alerts({ host }),
      api.alerts({ state: "resolved", host })]);
    return [...active.alerts, ...resolved.alerts];
  }

  async function load() {
    for (const t of toggles) t.setAttribute("aria-pressed", String(t.dataset.state === state()));
    replace(hostFilter, params.host ? h("span", { class: "chip" }, "host ", h("b", {}, params.host), " ",
      h("button", { type: "button", class: "link", "aria-label": "Show every host",
        on: { click: () => updateParams({ host: "" }) } }, "✕")) : null);
    const alerts = await fetchAlerts();
    count.textContent = `${alerts.length} ${state() === "all" ? "" : state()} alert${alerts.length === 1 ? "" : "s"}`;
    table.setRows(alerts);
  }

  return {
    refresh: load,
    async update(next) {
      params = next.params;
      await load();
    },
    destroy() {},
  };
}
