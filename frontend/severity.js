// How bad a host looks: its own verdict, made worse by the worst alert firing on it (a critical
// alert makes it red, a warning at least orange), and grey whenever it is stale, whatever it
// was when it last reported. The fleet rows and the host page's header use the same rule.

import { badge, VERDICTS, verdictOf } from "./palette.js";

const ALERT_VERDICT = { critical: "down", warning: "degraded" };
const SEVERITY_ORDER = ["info", "warning", "critical"];

/** The worst severity among `alerts` that are firing, or null. */
export function worstFiring(alerts) {
  let worst = null;
  for (const a of alerts || []) {
    if (a.state !== "firing") continue;
    if (SEVERITY_ORDER.indexOf(a.severity) > SEVERITY_ORDER.indexOf(worst)) worst = a.severity;
  }
  return worst;
}

/** {host: its worst firing alert's severity}. */
export function worstFiringByHost(alerts) {
  const byHost = {};
  for (const a of alerts) (byHost[a.host] ||= []).push(a);
  return Object.fromEntries(Object.entries(byHost).map(([host, list]) => [host, worstFiring(list)]));
}

/** The verdict a host is coloured by: `verdict`, or worse if its worst firing alert says so. */
export function shownVerdict(verdict, worstAlert, stale = false) {
  if (stale) return "unknown";
  const fromAlert = ALERT_VERDICT[worstAlert];
  return fromAlert && VERDICTS[fromAlert].rank > verdictOf(verdict).rank ? fromAlert : verdict;
}

/**
 * A host's badge: coloured by `shown` (its verdict made worse by its worst firing alert, see
 * severity.js), worded with its own verdict and the alert's severity when that raised it:
 * "✕ degraded · critical".
 */
export function hostBadge(verdict, reason, worstAlert, stale) {
  const shown = shownVerdict(verdict, worstAlert, stale);
  const raised = shown !== verdict && !stale;
  const b = badge(shown, raised ? `a ${worstAlert} alert is firing. ${reason}` : reason);
  b.lastChild.textContent = ` ${verdict}${raised ? ` · ${worstAlert}` : ""}`;
  return b;
}
