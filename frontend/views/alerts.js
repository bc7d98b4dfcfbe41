// Alerts: one line per host and object (a pair, a link, a GPU, the host), most urgent first,
// with its absolute start time and how long it has lasted; unfold a line for its alerts, each
// with its history. Ack and silence from the page (see admin.js). The state and host filters
// live in the URL (#/alerts?state=all&host=hgx8-01).

import { api } from "../shared/api.js";
import { actionButtons, adminPanel, statusLine } from "../panels/admin.js";
import { alertTarget, duration, durationOf, groupAlerts, startOf, subject } from "../shared/alert_groups.js";
import { h, replace } from "../shared/dom.js";
import { silenceIndex, silencesPanel } from "../panels/silences.js";
import * as fmt from "../shared/format.js";
import { hostHref, updateParams } from "../shared/router.js";

// "active" is the API's default (pending and firing); "all" adds the resolved ones.
const STATES = ["active", "firing", "pending", "resolved", "all"];
const STATE_LOOK = {
  firing: { glyph: "●", cls: "v-down" }, pending: { glyph: "◔", cls: "v-degraded" },
  resolved: { glyph: "✓", cls: "v-healthy" }, inactive: { glyph: "○", cls: "v-unknown" },
};
const HEADINGS = ["State", "Severity", "Host", "Concerns", "Alert", "Reason", "Started (UTC)",
  "Lasted", ""];

const text = (a, key) => a.annotations?.[key] ?? "";

function stateBadge(state) {
  const look = STATE_LOOK[state] || STATE_LOOK.inactive;
  return h("span", { class: `badge ${look.cls}` }, h("span", { class: "glyph" }, look.glyph), ` ${state}`);
}

function severityCell(severity) {
  return h("td", { class: `severity sev-${severity || "none"}` }, severity || "–");
}

let silenceById = new Map(); // the silences view's last answer, for "silenced until … by …"

/** Acked or silenced: someone is on it; the line is muted, saying who and until when. */
const handled = (a) => Boolean(a.acknowledged) || Boolean(a.silenced_by?.length);

function silenceWords(a) {
  const s = (a.silenced_by || []).map((id) => silenceById.get(id)).filter(Boolean)
    .sort((x, y) => (x.ends_at < y.ends_at ? 1 : -1))[0];
  return s ? `silenced until ${fmt.time(s.ends_at)} by ${s.created_by}` : "silenced";
}

function tags(a) {
  const ack = a.acknowledged;
  return [ack ? h("span", { class: "tag handled", title: ack.comment || "acknowledged" },
    `acked by ${ack.by}${ack.at ? ` ${fmt.time(ack.at)}` : ""}`) : null,
  a.silenced_by?.length ? h("span", { class: "tag handled" }, silenceWords(a)) : null,
    a.held ? h("span", { class: "tag maintenance", title: `${a.held}: shown, not paged` },
      a.in_maintenance ? "in maintenance" : "settling") : null];
}

function timeCells(start, seconds, ended) {
  return [h("td", { class: "num started" }, h("time", { datetime: start }, fmt.time(start))),
    h("td", { class: "num lasted", title: ended ? `resolved ${fmt.time(ended)}` : "still active" },
      `${duration(seconds)}${ended ? "" : " so far"}`)];
}

function historyList(detail) {
  return h("ol", { class: "history-list" }, detail.history.map((e) =>
    h("li", {}, h("time", { datetime: e.at }, fmt.time(e.at)), " ", h("b", {}, e.state),
      e.message ? ` — ${e.message}` : "")));
}

export function mount(root, route) {
  let params = route.params;
  let last = [];
  const open = new Set(); // groups unfolded by the user, kept across refreshes
  const foldedHosts = new Set(); // hosts folded by the user
  const toggles = STATES.map((s) => h("button", { type: "button", class: "toggle", "data-state": s,
    on: { click: () => updateParams({ state: s }) } }, s));
  const count = h("span", { class: "muted" });
  const hostFilter = h("span");
  const status = statusLine();
  const panel = adminPanel(() => render(last));
  const silences = silencesPanel(panel, (message, failed) => {
    status.say(message, failed);
    if (!failed) load();
  });
  const table = h("table", { class: "grid alerts-grid", "aria-label": "Alerts" },
    h("thead", {}, h("tr", {}, HEADINGS.map((t) => h("th", { scope: "col" }, t)))));
  replace(root, h("div", { class: "page-head" }, h("h1", {}, "Alerts")),
    h("section", { class: "panel table-wrap" }, h("div", { class: "toolbar" },
      h("span", { class: "toggles", role: "group", "aria-label": "State" }, toggles), hostFilter, count),
    panel.el, status.el, table), silences.el);

  const state = () => (STATES.includes(params.state) ? params.state : "active");

  function memberRow(a, group) {
    const history = h("tr", { class: "history", hidden: true }, h("td", { colspan: HEADINGS.length }));
    const showHistory = async () => {
      if (!history.hidden) {
        history.hidden = true;
        return;
      }
      replace(history.firstChild, h("span", { class: "muted" }, "loading…"));
      history.hidden = false;
      try {
        replace(history.firstChild, historyList(await api.alert(a.id)));
      } catch (error) {
        replace(history.firstChild, `could not load the history: ${error.detail || error.message}`);
      }
    };
    const row = h("tr", { class: "member", "data-key": String(a.id), "data-group": group.key,
      hidden: !open.has(group.key) },
    h("td", {}, stateBadge(a.state)), severityCell(a.severity), h("td", {}),
    h("td", {}, h("a", { href: alertTarget(a) }, subject(a))),
    h("td", {}, h("b", {}, a.alertname), tags(a)),
    h("td", { class: "reason" }, h("div", {}, text(a, "summary")), h("div", { class: "muted" }, text(a, "description"))),
    ...timeCells(startOf(a), durationOf(a), a.resolved_at),
    h("td", {}, h("button", { type: "button", class: "link history-button", on: { click: showHistory } }, "history")));
    return [row, history];
  }

  function hostRow(host, groups) {
    const alerts = groups.flatMap((g) => g.alerts);
    const live = alerts.filter((a) => a.state === "firing" || a.state === "pending");
    const worst = groups[0].worst;
    const folded = foldedHosts.has(host);
    const quiet = live.length && live.every(handled);
    const fold = h("button", { type: "button", class: "link unfold-host", "aria-expanded": String(!folded),
      on: { click: () => {
        if (folded) foldedHosts.delete(host);
        else foldedHosts.add(host);
        render(last);
      } } }, `${folded ? "▸" : "▾"} ${groups.length} object${groups.length === 1 ? "" : "s"}, ` +
      `${alerts.length} alert${alerts.length === 1 ? "" : "s"}`);
    return h("tbody", { class: `host-group${quiet ? " quiet" : ""}`, "data-host": host },
      h("tr", { class: "host-row" },
        h("td", {}, stateBadge(worst.state)), severityCell(worst.severity),
        h("th", { scope: "rowgroup", colspan: 3, class: "host-cell" },
          host ? h("a", { class: "host", href: hostHref(host) }, host) : "–", " ", fold),
        h("td", { class: "reason" }, quiet ? "every active alert acked or silenced" : text(worst, "summary")),
        h("td", { colspan: 2 }),
        h("td", { class: "actions-cell" }, actionButtons(alerts, panel, (message, failed) => {
          status.say(message, failed);
          if (!failed) load();
        }, host))));
  }

  function groupRow(g) {
    const members = g.alerts.length;
    const unfold = h("button", { type: "button", class: "link unfold", "aria-expanded": String(open.has(g.key)),
      on: { click: () => {
        if (open.has(g.key)) open.delete(g.key);
        else open.add(g.key);
        render(last);
      } } }, `${open.has(g.key) ? "▾" : "▸"} ${members} alert${members === 1 ? "" : "s"}`);
    const names = [...new Set(g.alerts.map((a) => a.alertname))].join(", ");
    const seconds = g.end ? (Date.parse(g.end) - Date.parse(g.start)) / 1000 : (Date.now() - Date.parse(g.start)) / 1000;
    const live = g.alerts.filter((a) => a.state === "firing" || a.state === "pending");
    const quiet = live.length && live.every(handled);
    return h("tr", { class: `group-row state-${g.worst.state}${quiet ? " quiet" : ""}`, "data-group": g.key },
      h("td", {}, stateBadge(g.worst.state)), severityCell(g.worst.severity),
      h("td", { class: "host-cell" }, g.host ? h("a", { class: "host", href: hostHref(g.host) }, g.host) : "–"),
      h("td", { class: "concerns" }, h("a", { href: alertTarget(g.worst) }, g.object.label)),
      h("td", { class: "alert-names" }, h("b", {}, names), tags(g.worst), " ", unfold),
      h("td", { class: "reason" }, text(g.worst, "summary")),
      ...timeCells(g.start, Math.max(0, seconds), g.end),
      h("td", { class: "actions-cell" }, actionButtons(g.alerts, panel, (message, failed) => {
        status.say(message, failed);
        if (!failed) load();
      })));
  }

  function render(alerts) {
    last = alerts;
    const groups = groupAlerts(alerts);
    const byHost = new Map();
    for (const g of groups) byHost.set(g.host, [...(byHost.get(g.host) || []), g]);
    // host -> its objects -> their alerts; hosts in the order of their most urgent object
    const rows = [...byHost.entries()].flatMap(([host, hostGroups]) => [hostRow(host, hostGroups),
      ...hostGroups.map((g) => h("tbody", { class: "group", "data-group": g.key, "data-host": host,
        hidden: foldedHosts.has(host) }, groupRow(g), g.alerts.map((a) => memberRow(a, g))))]);
    for (const old of table.querySelectorAll("tbody")) old.remove();
    table.append(...(rows.length ? rows : [h("tbody", {}, h("tr", { class: "empty" },
      h("td", { colspan: HEADINGS.length }, "nothing to show")))]));
    count.textContent = `${alerts.length} ${state() === "all" ? "" : state()} alert${alerts.length === 1 ? "" : "s"} ` +
      `in ${groups.length} group${groups.length === 1 ? "" : "s"}`;
  }

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
    const [alerts] = await Promise.all([fetchAlerts(), silences.refresh()]);
    silenceById = silenceIndex(silences.silences);
    render(alerts);
  }

  return {
    refresh: load,
    title: () => {
      const firing = last.filter((a) => a.state === "firing").length;
      return `Alerts${params.host ? ` · ${params.host}` : ""} · ${firing} firing`;
    },
    async update(next) {
      params = next.params;
      await load();
    },
    destroy() {},
  };
}
