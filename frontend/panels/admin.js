// Acknowledging and silencing alerts from the alerts page. Both need the admin token
// (PEERWATCH_ADMIN_TOKEN): it is typed once per browser tab and kept in sessionStorage, so it
// is gone when the tab closes, and it travels only in the Authorization header, never in a URL.
// The name goes with it ("acknowledged by alice").

import { api } from "../shared/api.js";
import { h, replace } from "../shared/dom.js";

const TOKEN_KEY = "peerwatch.adminToken";
const NAME_KEY = "peerwatch.adminName";
export const SILENCE_HOURS = [1, 4, 24];

export const session = {
  token: () => sessionStorage.getItem(TOKEN_KEY) || "",
  name: () => sessionStorage.getItem(NAME_KEY) || "",
  save(token, name) {
    sessionStorage.setItem(TOKEN_KEY, token);
    sessionStorage.setItem(NAME_KEY, name);
  },
  forget() {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(NAME_KEY);
  },
};

/** The silence matchers that cover exactly one alert: its rule, host and object labels. */
export function matchersOf(a) {
  const keep = ["alertname", "host", "gpu", "peer_gpu", "link", "test"];
  const labels = { ...a.labels, alertname: a.alertname, host: a.host };
  return keep.filter((k) => labels[k] !== undefined && labels[k] !== null)
    .map((k) => ({ name: k, value: String(labels[k]) }));
}

/** The matchers every one of `alerts` shares (a host's alerts: its host; an object's: its
 * host and object labels): one silence covers them all, and expires in one click (issue 40:
 * silencing a host made one silence per alert). */
export function commonMatchers(alerts) {
  const [first, ...rest] = alerts.map(matchersOf);
  return (first || []).filter((m) => rest.every((ms) => ms.some((o) => o.name === m.name && o.value === m.value)));
}

/** The token form: shown folded; "ack"/"silence" without a token unfolds it. */
export function adminPanel(onChange) {
  const token = h("input", { type: "password", id: "admin-token", autocomplete: "off",
    "aria-label": "Admin token", placeholder: "admin token" });
  const name = h("input", { type: "text", id: "admin-name", "aria-label": "Your name",
    placeholder: "your name", value: session.name() });
  const comment = h("input", { type: "text", id: "silence-comment", "aria-label": "Comment for new silences",
    placeholder: "comment for silences (why)", class: "comment" });
  const state = h("span", { class: "muted", id: "admin-state", role: "status" });
  const form = h("form", { class: "toolbar admin-form" }, token, name, comment,
    h("button", { type: "submit" }, "Use for this tab"),
    h("button", { type: "button", on: { click: () => { session.forget(); show(); onChange(); } } }, "Forget"),
    state);
  const el = h("details", { class: "admin" }, h("summary", {}, "Acknowledge and silence (admin token)"), form);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!token.value || !name.value) {
      state.textContent = "both the token and your name are needed";
      return;
    }
    // checked on entry (GET /admin/check changes nothing): a mistyped token is said now,
    // not when the first ack fails
    state.textContent = "checking the token…";
    try {
      await api.adminCheck(token.value);
    } catch (error) {
      state.textContent = error.status === 401 || error.status === 403
        ? "this token is not an admin credential: not kept" : `could not check the token: ${error.detail || error.message}`;
      state.dataset.refused = "true";
      return;
    }
    delete state.dataset.refused;
    session.save(token.value, name.value);
    token.value = "";
    show();
    onChange();
  });
  function show() {
    state.textContent = session.token() ? `token set for this tab; acting as ${session.name()}`
      : "no token: ack and silence are off";
  }
  show();
  return {
    el,
    comment: () => comment.value.trim() || "from the dashboard",
    ask() {
      el.open = true;
      token.focus();
      state.textContent = "enter the admin token (kept for this tab only) and your name";
    },
  };
}

/** Ack and silence buttons for a group's active alerts (an object's, or a whole host's);
 * `done(message)` after each action. Alerts already acked are not acked again. */
export function actionButtons(alerts, panel, done, what = "") {
  const active = alerts.filter((a) => a.state === "firing" || a.state === "pending");
  if (!active.length) return null;
  const hours = h("select", { "aria-label": "Silence for", class: "silence-hours" },
    SILENCE_HOURS.map((n) => h("option", { value: n }, `${n} h`)));
  const guard = (work) => async () => {
    if (!session.token()) {
      panel.ask();
      return;
    }
    try {
      done(await work());
    } catch (error) {
      done(`failed: ${error.detail || error.message}`, true);
    }
  };
  const ack = guard(async () => {
    const open = active.filter((a) => !a.acknowledged);
    await Promise.all(open.map((a) => api.ack(a.id, { by: session.name() }, session.token())));
    return `acknowledged ${active.length} alert${active.length === 1 ? "" : "s"}${what ? ` of ${what}` : ""}`;
  });
  const silence = guard(async () => {
    const shared = commonMatchers(active);
    const sets = shared.length ? [shared] : active.map(matchersOf); // alerts of no common label
    await Promise.all(sets.map((matchers) => api.silence({ matchers,
      duration_s: Number(hours.value) * 3600, created_by: session.name(),
      comment: panel.comment() }, session.token())));
    return `silenced ${active.length} alert${active.length === 1 ? "" : "s"}${what ? ` of ${what}` : ""} ` +
      `for ${hours.value} h (${sets.length} silence${sets.length === 1 ? "" : "s"})`;
  });
  const label = (verb) => `${verb} ${active.length} active alert${active.length === 1 ? "" : "s"}${what ? ` of ${what}` : ""}`;
  return h("span", { class: "actions" },
    h("button", { type: "button", class: "ack", "aria-label": label("ack"), on: { click: ack } }, "ack"),
    h("button", { type: "button", class: "silence", "aria-label": label("silence"), on: { click: silence } }, "silence"),
    hours);
}

export function statusLine() {
  const el = h("p", { class: "muted action-status", role: "status", "aria-live": "polite" });
  return {
    el,
    say(message, failed = false) {
      replace(el, message);
      el.classList.toggle("error", failed);
    },
  };
}
