// What is wrong on a host, in words: the problem list of the host page and the periods its
// pair chart shades. Both come from the health verdicts (and the alerts) the API gives.

import { compareFaults } from "../shared/faults.js";
import { scopeOfText } from "../shared/scope.js";
import * as fmt from "../shared/format.js";
import { verdictOf } from "../shared/palette.js";

const SEVERITY_OF = { down: "critical", degraded: "warning" };

/** As a fault (faults.js): severity from the verdict, scope from what it is, age from since. */
function ranked(item, scope) {
  return { ...item, severity: SEVERITY_OF[item.verdict] || "info", scope, start: item.start ?? item.since,
    firing: false };
}

function worstTest(pair) {
  const bad = pair.tests.filter((t) => t.verdict === "degraded" || t.verdict === "down");
  const rank = (t) => verdictOf(t.verdict).rank * 10 - (t.ratio_expected ?? 1);
  return bad.sort((a, b) => rank(b) - rank(a))[0];
}

/** A GPU's non-healthy links of one verdict as one line (issue 40: a tray listed 17 lines,
 * one per link): "GPU3 links 16, 17", the reason of the first and how many say the same. */
function linkProblems(links) {
  const byGpu = new Map();
  for (const l of links) {
    if (l.verdict === "healthy") continue;
    const key = `${l.gpu}|${l.verdict}`;
    if (!byGpu.has(key)) byGpu.set(key, []);
    byGpu.get(key).push(l);
  }
  return [...byGpu.values()].map((ls) => {
    const first = ls.reduce((a, b) => ((a.since || "~") <= (b.since || "~") ? a : b));
    const numbers = ls.map((l) => l.link).sort((a, b) => a - b);
    const what = numbers.length > 1 ? `GPU${first.gpu} links ${numbers.join(", ")}` : `GPU${first.gpu} link ${numbers[0]}`;
    const others = new Set(ls.map((l) => l.reason)).size - 1;
    const reason = others > 0 ? `${first.reason} (and ${others} more like it)` : first.reason;
    return ranked({ verdict: first.verdict, what, reason, since: first.since, gpu: first.gpu,
      links: numbers }, 1);
  });
}

const PAIR_NAME = /GPU\d+\s*(->|→)\s*GPU\d+/g;

/** What a pair's reason says once its own pair, test and figures are taken out: pairs whose
 * reasons say the same thing group into one line (issue 40: a PCIe host repeated a 5-line
 * paragraph for each of 6 pairs). */
function reasonKey(p, testNames) {
  let text = String(p.reason).replace(PAIR_NAME, "PAIR").replace(/\([^)]*\d[^)]*\)/g, "")
    .replace(/\d+(\.\d+)?\s*(GB\/s|MB\/s|µs|us|ms|s|%|x)?/g, "#");
  for (const t of testNames) text = text.split(t).join("TEST");
  return `${p.verdict}|${text}`;
}

/** The short words of a group's reason: the first pair's, without its own pair name, test
 * and figures (bandwidths, times), up to its action and references; the whole of each pair's
 * reason goes behind a fold. */
function groupWords(reason, testNames) {
  let plain = String(reason).replace(PAIR_NAME, "");
  for (const t of testNames) plain = plain.split(t).join("");
  plain = plain.replace(/\([^)]*\d[^)]*\)/g, "")
    .replace(/\d+(\.\d+)?\s*(GB\/s|MB\/s|GiB\/s|µs|us|ms)/g, "").replace(/\s+/g, " ").trim();
  const cut = plain.search(/; action: | \[/);
  return (cut >= 0 ? plain.slice(0, cut) : plain).replace(/^(is|are)\s+/, "");
}

/** Pair problems whose reasons say the same (`reasonKey`) as one item: `pairs` lists them,
 * `details` each one's whole reason, the oldest `since` and the first pair to open. */
export function groupPairs(items, testNames) {
  const groups = new Map();
  for (const item of items) {
    const key = reasonKey(item, testNames);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(item);
  }
  return [...groups.values()].map((same) => {
    if (same.length === 1) return same[0];
    const first = same[0];
    const names = same.map((x) => x.what);
    const oldest = (k) => same.map((x) => x[k]).filter(Boolean).sort()[0] ?? null;
    return { ...first, what: `${same.length} pairs`, pairs: names, reason: groupWords(first.reason, testNames),
      details: same.map((x) => `${x.what}${x.test ? ` ${x.test}` : ""}: ${x.reason}`),
      since: oldest("since"), start: oldest("start") };
  });
}

/** A reason without its object's name in front ("GPU4: ", "GPU4 link 3: "). */
const bare = (reason) => String(reason).replace(/^GPU\d+( link \d+)?: /, "").replace(/ \(and \d+ more like it\)$/, "");

/** Non-healthy links, pairs and GPUs in the one order of faults.js (severity, then scope: a GPU
 * lost, links down, a slow pair, below its fleet peers; then age):
 * [{verdict, what, reason, since, pair?, test?}] (`since`: when the object entered its
 * verdict, from the server's stored judgement). */
export function pairProblems(health) {
  if (!health) return [];
  const items = [];
  items.push(...linkProblems(health.links));
  const pairs = [];
  for (const p of health.pairs) {
    const t = worstTest(p);
    if (!t) continue;
    const since = t.low_since ? ` (low since ${fmt.time(t.low_since)})` : "";
    pairs.push(ranked({ verdict: p.verdict, what: fmt.pair(p.src, p.dst), reason: `${p.reason}${since}`,
      pair: [p.src, p.dst], test: t.test, since: t.low_since ? null : p.since, start: t.low_since || p.since },
    /fleet peers/i.test(p.reason) ? 3 : 2));
  }
  const testNames = [...new Set(health.pairs.flatMap((p) => p.tests.map((t) => t.test)))];
  items.push(...groupPairs(pairs, testNames));
  // A GPU judged on one of its links' own fault (an Xid 74 on GPU4 NVLink 3) says what its
  // link's line says: said once, on the link's line (issue 40: the same Xid 74 sentence 4
  // times in the page's top 300 px).
  const linkSaid = new Set(items.map((i) => `${i.gpu}|${bare(i.reason)}`));
  for (const g of health.gpus) {
    if (linkSaid.has(`${g.gpu}|${bare(g.reason)}`)) continue;
    if (g.verdict !== "healthy" && g.verdict !== "unknown") {
      const scope = g.verdict === "down" ? Math.min(1, scopeOfText(g.reason)) : scopeOfText(g.reason);
      items.push(ranked({ verdict: g.verdict, what: `GPU${g.gpu}`, reason: g.reason, since: g.since }, scope));
    }
  }
  return items.sort((a, b) => compareFaults(a, b) || verdictOf(b.verdict).rank - verdictOf(a.verdict).rank);
}

function alertConcerns(alert, s) {
  const l = alert.labels || {};
  if (l.gpu === undefined || l.peer_gpu === undefined) return false;
  return Number(l.gpu) === s.src && Number(l.peer_gpu) === s.dst && (!l.test || l.test === s.test);
}

/** Shaded periods for a pair's chart: its current low run, and alerts about this pair. */
export function hostAlertPeriods(health, alerts, s) {
  const periods = [];
  const pair = health?.pairs.find((p) => p.src === s.src && p.dst === s.dst);
  const t = pair?.tests.find((x) => x.test === s.test);
  if (t?.low_since) periods.push({ kind: "low", start: t.low_since, end: null, label: `low (${t.verdict})` });
  for (const a of alerts || []) {
    if (!alertConcerns(a, s) || a.state === "inactive") continue;
    periods.push({ kind: "alert", start: a.fired_at || a.active_since, end: a.resolved_at,
      label: `${a.alertname} (${a.state})` });
  }
  return periods;
}
