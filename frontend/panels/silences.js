// The silences view of the alerts page: every silence (active first, then the expired ones
// of the last days), with what it matches, who made it and why (its comment), from and until
// when, and an "expire" button (admin token) that ends it now. Alerts under an active silence
// are shown muted with "silenced until … by …" (alerts.js, via `silenceIndex`).

import { api } from "../shared/api.js";
import { session } from "./admin.js";
import { h, replace } from "../shared/dom.js";
import * as fmt from "../shared/format.js";

/** {id: silence} for the tags of silenced alerts. */
export function silenceIndex(silences) {
  return new Map((silences || []).map((s) => [s.id, s]));
}

const matcherText = (s) => s.matchers.map((m) => `${m.name}${m.is_regex ? "=~" : "="}${m.value}`).join(", ");

function silenceRow(s, panel, done) {
  const expire = async () => {
    if (!session.token()) {
      panel.ask();
      return;
    }
    try {
      await api.expireSilence(s.id, session.token());
      done(`expired silence ${s.id}`);
    } catch (error) {
      done(`failed: ${error.detail || error.message}`, true);
    }
  };
  return h("tr", { "data-key": String(s.id), class: s.active ? null : "expired" },
    h("td", {}, s.active ? h("span", { class: "badge v-unknown" }, "silencing") : h("span", { class: "muted" }, "expired")),
    h("td", { class: "reason" }, h("code", {}, matcherText(s))),
    h("td", {}, s.created_by),
    h("td", { class: "reason comment" }, s.comment || "–"),
    h("td", { class: "num" }, fmt.time(s.starts_at)),
    h("td", { class: "num until" }, fmt.time(s.ends_at)),
    h("td", {}, s.active ? h("button", { type: "button", class: "expire",
      "aria-label": `expire silence ${s.id} (${matcherText(s)})`, on: { click: expire } }, "expire") : null));
}

/** The panel; `refresh()` reloads it, `silences` what it last showed. */
export function silencesPanel(panel, done) {
  const body = h("tbody");
  const count = h("span", { class: "muted" });
  const el = h("section", { class: "panel table-wrap", id: "silences", "aria-labelledby": "silences-head",
    tabindex: 0 },
    h("div", { class: "panel-head" }, h("h2", { id: "silences-head" }, "Silences"), count),
    h("table", { class: "grid silences-grid", "aria-label": "Silences" },
      h("thead", {}, h("tr", {}, ["State", "Matches", "By", "Comment", "From (UTC)", "Until (UTC)", ""]
        .map((t) => h("th", { scope: "col" }, t)))), body));
  const state = { silences: [] };
  return {
    el,
    get silences() { return state.silences; },
    async refresh() {
      try {
        state.silences = (await api.silences(true)).silences;
      } catch (error) {
        if (error.name === "AbortError" || !error.status) throw error;
        state.silences = [];
      }
      const active = state.silences.filter((s) => s.active);
      const shown = [...active, ...state.silences.filter((s) => !s.active).slice(0, 20)];
      count.textContent = `${active.length} active${shown.length > active.length ? `, the last ${shown.length - active.length} expired` : ""}`;
      replace(body, shown.length ? shown.map((s) => silenceRow(s, panel, done))
        : h("tr", { class: "empty" }, h("td", { colspan: 7 }, "no silences")));
    },
  };
}
