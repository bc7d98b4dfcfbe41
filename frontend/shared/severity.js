// A host's verdict and its alerts' severity are two things, shown apart, each with a glyph of
// its own: the verdict (healthy ✓, degraded ▲, down ✕, unknown ?) is what the measurements
// say; the severity (critical ‼, warning !, info i) is how loudly a rule pages about it. A
// stale host's verdict is "unknown", whatever it was when it last reported. A host inside a
// maintenance window is in a state of its own ("⚒ maintenance"): demoted, muted, but its
// verdict and its fault still read.

import { h } from "./dom.js";
import { badge } from "./palette.js";

export const SEVERITY_LOOK = {
  critical: { glyph: "‼", rank: 0 }, warning: { glyph: "!", rank: 1 }, info: { glyph: "i", rank: 2 },
};

/** The worst severity among `alerts` that are firing, or null. */
export function worstFiring(alerts) {
  let worst = null;
  for (const a of alerts || []) {
    if (a.state !== "firing" || !SEVERITY_LOOK[a.severity]) continue;
    if (worst === null || SEVERITY_LOOK[a.severity].rank < SEVERITY_LOOK[worst].rank) worst = a.severity;
  }
  return worst;
}

/** {host: its worst firing alert's severity}. */
export function worstFiringByHost(alerts) {
  const byHost = {};
  for (const a of alerts) (byHost[a.host] ||= []).push(a);
  return Object.fromEntries(Object.entries(byHost).map(([host, list]) => [host, worstFiring(list)]));
}

/** The verdict a host is shown with: its own, or "unknown" when it is stale or its probe's
 * clock is off (`clockNote`, the API's `clock_note`: its times are not trusted). */
export function shownVerdict(verdict, stale = false, clockNote = null) {
  return stale || clockNote ? "unknown" : verdict;
}

/** The verdict's badge: its own colour, glyph and word (never raised by an alert). */
export function hostBadge(verdict, reason, stale = false, clockNote = null) {
  const shown = shownVerdict(verdict, stale, clockNote);
  if (stale) return badge(shown, `no recent report; last judged ${verdict}. ${reason}`);
  return badge(shown, clockNote ? `${clockNote}. Judged ${verdict}: ${reason}` : reason);
}

/** "◷ clock off" (its title: the skew in words, not trusted yet): a host whose probe clock
 * is off the server's by more than the ProbeClockSkew limit, said from its first report (the
 * alert waits 10 min). */
export function clockTag(note) {
  if (!note) return null;
  return h("span", { class: "tag clock", "data-clock": "untrusted", title: note },
    h("span", { class: "glyph", "aria-hidden": "true" }, "◷"), " clock off");
}

/** "‼ critical" (or "‼ 2 critical"): the severity of the alerts firing, apart from the verdict. */
export function severityTag(severity, count = null) {
  if (!severity || !SEVERITY_LOOK[severity]) return null;
  return h("span", { class: `tag sev sev-${severity}`, "data-severity": severity,
    title: `${count ?? "an"} ${severity} alert${count > 1 ? "s" : ""} firing` },
  h("span", { class: "glyph", "aria-hidden": "true" }, SEVERITY_LOOK[severity].glyph),
  ` ${count && count > 1 ? `${count} ` : ""}${severity}`);
}

/** "⚒ maintenance": a host inside a declared window (its alerts shown, not paged). */
export function maintenanceBadge(window) {
  if (!window) return null;
  return h("span", { class: "badge state-maintenance", title: `maintenance window: ${window.comment || ""}` },
    h("span", { class: "glyph", "aria-hidden": "true" }, "⚒"), " maintenance");
}
