// The host page's Xid/SXid events (issue 24): a list under the charts, newest first, each with
// what NVIDIA's catalog says it means and what to do, and the same events as marks on every
// time chart (timeline.js `eventMarks`). GET /hosts/{host}/events for the page's window.

import { api } from "../shared/api.js";
import { h, replace } from "../shared/dom.js";
import * as fmt from "../shared/format.js";

const SEVERITY_CLASS = { critical: "v-down", warning: "v-degraded", info: "" };
const SHOWN = 50;

function where(e) {
  if (e.object === "switch" || e.kind === "sxid") return `NVSwitch ${e.switch ?? "?"}`;
  return e.link !== null && e.link !== undefined ? `GPU${e.gpu} link ${e.link}` : `GPU${e.gpu ?? "?"}`;
}

function row(e) {
  return h("tr", { class: SEVERITY_CLASS[e.severity] || "", "data-event": `${e.kind}${e.code}` },
    h("td", {}, fmt.time(e.at)), h("td", {}, h("b", {}, e.label), e.count > 1 ? ` ×${e.count}` : ""),
    h("td", {}, where(e)), h("td", {}, e.severity),
    h("td", {}, e.meaning, h("br"), h("span", { class: "muted" }, e.action)),
    h("td", { class: "muted", title: e.message }, e.sources.join(" + ")));
}

export function eventsPanel(host) {
  const body = h("div", { id: "events-list" });
  const section = h("section", { class: "panel table-wrap", id: "events-panel", hidden: true },
    h("div", { class: "panel-head" }, h("h2", {}, "Xid / SXid events"), h("span", { id: "events-catalog",
      class: "muted" })), body);
  let events = [];
  let catalog = "";
  return {
    el: section,
    async load(window_) {
      try {
        const answer = await api.events(host, window_);
        events = answer.events;
        catalog = answer.catalog_version;
      } catch (error) {
        if (!error.status) throw error; // network failure or abort: the page's own error
        events = [];
      }
    },
    render() {
      section.hidden = !events.length;
      if (!events.length) return;
      replace(section.querySelector("#events-catalog"), `meaning and action from ${catalog}`);
      replace(body, h("table", { class: "table" },
        h("thead", {}, h("tr", {}, ["time", "event", "where", "severity", "meaning · action", "seen by"]
          .map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, events.slice(0, SHOWN).map(row))));
    },
    /** The events as marks for the time charts: "⚡ Xid 74 GPU1 link 3". */
    events: () => events.map((e) => ({ at: e.at, kind: "xid", label: `${e.label} ${where(e)}: ${e.meaning}` })),
  };
}
