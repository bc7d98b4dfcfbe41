// Alerts grouped the way an operator thinks about them: one group per host and object (a GPU
// pair in either direction, an NVLink port, a GPU, the host itself), so a slow pair that
// fires for four tests in both directions is one line, not eight. Pure functions of the
// alerts API's answer; alerts.js draws them.

import { scopeOfRule } from "./scope.js";
import * as fmt from "./format.js";
import { hostHref } from "./router.js";

export const STATE_RANK = { firing: 0, pending: 1, resolved: 2, inactive: 3 };
export const SEVERITY_RANK = { critical: 0, warning: 1, info: 2 };

/** What an alert concerns, as {key, label, params} (params: the host page's URL params). */
export function objectOf(a) {
  const l = a.labels || {};
  if (l.gpu !== undefined && l.peer_gpu !== undefined) {
    const [lo, hi] = [Number(l.gpu), Number(l.peer_gpu)].sort((x, y) => x - y);
    return { key: `pair ${lo}-${hi}`, label: `GPU${lo} ↔ GPU${hi}`,
      params: { pair: `${l.gpu}-${l.peer_gpu}`, test: l.test } };
  }
  if (l.gpu !== undefined && l.link !== undefined) {
    return { key: `link ${l.gpu}-${l.link}`, label: `GPU${l.gpu} link ${l.link}`,
      params: { gpu: l.gpu, link: l.link } };
  }
  if (l.gpu !== undefined) return { key: `gpu ${l.gpu}`, label: `GPU${l.gpu}`, params: { gpu: l.gpu } };
  // a lost NVSwitch's page (it stands for the links of the GPUs behind it), not "host"
  if (l.switch !== undefined) return { key: `switch ${l.switch}`, label: `NVSwitch ${l.switch}`, params: {} };
  return { key: "host", label: "host", params: {} };
}

/** One alert's own subject: "GPU1 → GPU2 ce_write", "GPU3 link 16", "GPU3", "NVSwitch
 * nvswitch0", "host". */
export function subject(a) {
  const l = a.labels || {};
  if (l.gpu !== undefined && l.peer_gpu !== undefined) {
    return `${fmt.pair(l.gpu, l.peer_gpu)}${l.test ? ` ${l.test}` : ""}`;
  }
  return objectOf(a).label;
}

/** Where an alert points: its host page, scrolled to its pair, link or GPU. */
export function alertTarget(a) {
  const l = a.labels || {};
  return hostHref(a.host || l.host || "", objectOf(a).params);
}

/** The line an alert is rolled up into: its pair (either direction), its GPU (a link's
 * alerts are its GPU's: ten links down are one line), or the host. */
export function groupOf(a) {
  const o = objectOf(a);
  const l = a.labels || {};
  if (o.key.startsWith("link ")) return { key: `gpu ${l.gpu}`, label: `GPU${l.gpu}`, params: { gpu: l.gpu } };
  return o;
}

export const startOf = (a) => a.fired_at || a.active_since;

/** Seconds the alert has lasted: until it resolved, or until `now`. */
export function durationOf(a, now = Date.now()) {
  const end = a.resolved_at ? Date.parse(a.resolved_at) : now;
  return Math.max(0, (end - Date.parse(startOf(a))) / 1000);
}

function worse(a, b) {
  const byState = (STATE_RANK[a.state] ?? 9) - (STATE_RANK[b.state] ?? 9);
  if (byState) return byState < 0 ? a : b;
  return (SEVERITY_RANK[a.severity] ?? 9) <= (SEVERITY_RANK[b.severity] ?? 9) ? a : b;
}

/**
 * [{key, host, object, alerts (worst first), worst, start, end}], the most urgent group first:
 * by the worst member's state, then severity, then the earliest start.
 */
export function groupAlerts(alerts) {
  const groups = new Map();
  for (const a of alerts) {
    const object = groupOf(a);
    const key = `${a.host}\u001f${object.key}`;
    if (!groups.has(key)) groups.set(key, { key, host: a.host, object, alerts: [] });
    groups.get(key).alerts.push(a);
  }
  const out = [...groups.values()].map((g) => {
    g.alerts.sort((x, y) => (worse(x, y) === x ? -1 : 1));
    g.worst = g.alerts[0];
    const links = [...new Set(g.alerts.filter((a) => a.labels?.link !== undefined).map((a) => Number(a.labels.link)))]
      .sort((x, y) => x - y);
    if (links.length) g.object = { ...g.object, label: `${g.object.label}: link${links.length > 1 ? "s" : ""} ${ranges(links)}` };
    const live = g.alerts.filter((a) => a.state === "firing" || a.state === "pending");
    const timed = live.length ? live : g.alerts;
    g.start = timed.map(startOf).sort()[0];
    g.end = live.length ? null : g.alerts.map((a) => a.resolved_at).sort().at(-1) ?? null;
    return g;
  });
  // The one order of faults.js: live before resolved, unhandled before acked or silenced, then
  // severity, then scope (a GPU lost first), then age (the oldest first).
  return out.sort((x, y) => live(y) - live(x) || handledRank(x) - handledRank(y)
    || (SEVERITY_RANK[x.worst.severity] ?? 9) - (SEVERITY_RANK[y.worst.severity] ?? 9)
    || scopeOf(x) - scopeOf(y)
    || (STATE_RANK[x.worst.state] ?? 9) - (STATE_RANK[y.worst.state] ?? 9)
    || Date.parse(x.start) - Date.parse(y.start) || x.key.localeCompare(y.key));
}

const isLive = (a) => a.state === "firing" || a.state === "pending";
const live = (g) => (g.alerts.some(isLive) ? 1 : 0);
const scopeOf = (g) => Math.min(...g.alerts.map((a) => scopeOfRule(a.alertname)));
/** 1 when every live alert of the group is acked or silenced: someone is on it. */
function handledRank(g) {
  const active = g.alerts.filter(isLive);
  return active.length && active.every((a) => a.acknowledged || a.silenced_by?.length) ? 1 : 0;
}

/** [8, 9, 10, 12] -> "8–10, 12". */
export function ranges(sorted) {
  const out = [];
  for (const n of sorted) {
    const last = out.at(-1);
    if (last && n === last[1] + 1) last[1] = n;
    else out.push([n, n]);
  }
  return out.map(([a, b]) => (a === b ? `${a}` : `${a}–${b}`)).join(", ");
}

/** "3 h 12 min", "42 min", "35 s". */
export function duration(seconds) {
  const s = Math.round(seconds);
  if (s < 90) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} min`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}
