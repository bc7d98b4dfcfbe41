// The host page's Xid/SXid events (issue 24): a list under the charts, one row per (object,
// event) with its count and first and last time seen (issue 40: an Xid every 30 s was 14 rows),
// newest first, each with what NVIDIA's catalog says it means and what to do, and the same
// events as marks on every time chart (timeline.js `eventMarks` folds repeats into a band).
// GET /hosts/{host}/events for the page's window.

import { api } from "../shared/api.js";
import { h, replace } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { rollUp, where } from "../shared/event_rollup.js";

const SEVERITY_CLASS = { critical: "v-down", warning: "v-degraded", info: "" };
const SHOWN = 50;

function seen(e) {
  return e.count > 1 ? [fmt.time(e.first), h("br"), h("span", { class: "muted" }, `to ${fmt.time(e.last)}`)]
    : fmt.time(e.last);
}

function row(e) {
  return h("tr", { class: SEVERITY_CLASS[e.severity] || "", "data-event": `${e.kind}${e.code}`,
    "data-where": where(e), "data-count": e.count },
  h("td", {}, seen(e)), h("td", {}, h("b", {}, e.label), e.count > 1 ? ` ×${e.count}` : ""),
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
  let rows = []; // rolled up: one per (object, event)
  let catalog = "";
  return {
    el: section,
    async load(window_) {
      try {
        const answer = await api.events(host, window_);
        events = answer.events;
        rows = rollUp(events);
        catalog = answer.catalog_version;
      } catch (error) {
        if (!error.status) throw error; // network failure or abort: the page's own error
        events = [];
        rows = [];
      }
    },
    render() {
      section.hidden = !events.length;
      if (!events.length) return;
      replace(section.querySelector("#events-catalog"), `meaning and action from ${catalog}`);
      replace(body, h("table", { class: "table" },
        h("thead", {}, h("tr", {}, ["seen", "event", "where", "severity", "meaning · action", "seen by"]
          .map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows.slice(0, SHOWN).map(row))));
    },
    /** The events as marks for the time charts: "⚡ Xid 74 GPU1 link 3" (eventMarks folds
     * the repeats of one into a band with their count). */
    events: () => events.map((e) => ({ at: e.at, kind: "xid", count: e.count > 0 ? e.count : 1,
      label: `${e.label} ${where(e)}: ${e.meaning}` })),
  };
}
