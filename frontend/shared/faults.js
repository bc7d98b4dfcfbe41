// One ordering of what is wrong, for every view (fleet rows, the host's header and problem
// list, the alerts page, domain cells): severity first, then scope (a GPU lost > links down >
// a slow pair > slower than the fleet's peers > the rest), then age (the oldest first).
// A fault is {severity, scope, start, text, href?}: built here from an alert or from a part
// of a host's reason; `topFault` picks the first and counts the others ("+N more").

import { groupOf } from "./alert_groups.js";
import { hostHref } from "./router.js";
import { scopeOfRule, scopeOfText } from "./scope.js";

export const SEVERITY_RANK = { critical: 0, warning: 1, info: 2 };

const VERDICT_SEVERITY = { down: "critical", degraded: "warning" };

/** compare(a, b) < 0 when `a` is the more urgent fault. */
export function compareFaults(a, b) {
  return (SEVERITY_RANK[a.severity] ?? 3) - (SEVERITY_RANK[b.severity] ?? 3)
    || a.scope - b.scope
    || (a.firing === b.firing ? 0 : a.firing ? -1 : 1)
    || (Date.parse(a.start || "") || Infinity) - (Date.parse(b.start || "") || Infinity);
}

/** An active alert as a fault. */
export function alertFault(a) {
  const l = a.labels || {};
  const params = l.gpu !== undefined && l.peer_gpu !== undefined
    ? { pair: `${l.gpu}-${l.peer_gpu}`, test: l.test } : l.gpu !== undefined ? { gpu: l.gpu, link: l.link } : {};
  return { key: groupOf(a).key, severity: a.severity, scope: scopeOfRule(a.alertname),
    start: a.active_since || a.fired_at, // when the fault began, not when it paged
    firing: a.state === "firing", text: a.annotations?.summary || `${a.alertname}`,
    alertname: a.alertname, href: hostHref(a.host, params) };
}

/** The parts of a host's reason after its tally ("hgx8-01: 1 of 8 GPUs …; GPU3: …; …"). */
export function reasonParts(reason) {
  const parts = String(reason || "").split("; ").filter(Boolean);
  return parts.length > 1 ? parts.slice(1) : parts;
}

/** Faults of a host without (or beside) its alerts: each specific part of its reason. */
export function reasonFaults(verdict, reason, since) {
  if (verdict === "healthy") return [];
  const severity = VERDICT_SEVERITY[verdict] || "info";
  return reasonParts(reason).map((text) => ({ severity, scope: scopeOfText(text), start: since,
    firing: false, text }));
}

/**
 * A host's faults, most urgent first: its active alerts; when none is active, the parts of
 * its reason (a verdict the rules do not page on still says what is wrong).
 */
export function hostFaults(host, alerts) {
  const own = (alerts || []).filter((a) => a.host === host.host
    && (a.state === "firing" || a.state === "pending")).map(alertFault);
  const faults = own.length ? own : reasonFaults(host.verdict, host.reason, host.since);
  return onePerObject(faults.sort(compareFaults));
}

/** The most urgent fault of each object (a pair slow in four tests both ways is one fault). */
function onePerObject(sorted) {
  const seen = new Set();
  return sorted.filter((f) => {
    if (!f.key) return true;
    if (seen.has(f.key)) return false;
    seen.add(f.key);
    return true;
  });
}

/** A fault's kind in a word or two, for "+2 more: NVLinkDown, XidError". */
const kindOf = (f) => f.alertname || (f.text.length > 32 ? `${f.text.slice(0, 31)}…` : f.text);

/** {fault, more, hidden}: the most urgent fault, how many others there are and their kinds
 * (each once, most urgent first: "+1 more" alone hid an Xid behind a slow pair), or null. */
export function topFault(faults) {
  if (!faults.length) return null;
  const hidden = [...new Set(faults.slice(1).map(kindOf))];
  return { fault: faults[0], more: faults.length - 1, hidden };
}

/** " +2 more: NVLinkDown, XidError" (the kinds hidden behind the top fault). */
export const moreWords = (top) => ` +${top.more} more: ${top.hidden.join(", ")}`;
