// Network: the network between hosts, #/network?test=net_write&host=<name> (docs/network.md).
// What an operator needs first comes first: the faults triangulation found (a spine group, a
// host's NIC/cable, a leaf switch, a path), each with its pairs' figures against expected;
// then the suspects the planner tests next; then every host pair as a matrix, hosts grouped
// by leaf, each cell in the host matrix's colour scale (blue = as expected, orange to
// vermillion = slow), a pair never tested grey and dashed: never a colour as if measured.
// `host=` outlines that host's row and column (a host page links here with it).

import { api, TEST_CATALOG } from "../shared/api.js";
import { h, replace } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { RATIO_BLUE_FROM, ratioColour, textOn, verdictOf } from "../shared/palette.js";
import { href, hostHref } from "../shared/router.js";

/** Tests whose results are host pairs (GET /api/v1/tests, scope host_pair). */
export const NET_TESTS = TEST_CATALOG.filter((t) => t.scope === "host_pair").map((t) => t.name);
/** The host-pair test shown unless the URL names another: the catalogue's first (NCCL
 * send/recv between two hosts' GPUs). */
export const DEFAULT_TEST = NET_TESTS[0] ?? null;
const OFF_MAP = "(off the map)";

export const networkHref = (params = {}) => href("network", [], params);

/** Each cause triangulation names, in the words an operator acts on (docs/network.md). */
const CAUSES = {
  spine: { label: "Spine group", alert: "NetworkSpineSlow",
    where: "every tested pair crossing it is slow: congestion, a bad uplink or routing",
    todo: "check the spine group's uplinks and routing; pairs under one leaf are not affected" },
  host: { label: "Host", alert: "NetworkHostPathSlow",
    where: "slow with every partner: its NIC, its cable or transceiver, or its PCIe path to the NIC",
    todo: "open its host page (RDMA NICs: a flapping, erroring or slow port), then reseat or replace " +
      "the cable or transceiver; multi-node placement leaves it out meanwhile" },
  leaf: { label: "Leaf switch", alert: "NetworkLeafSlow",
    where: "every tested host under it is slow with every partner: the leaf switch",
    todo: "check the leaf switch (its uplinks, its ports' errors); its hosts get no alert of their own" },
  path: { label: "Path", alert: "NetworkPathSlow",
    where: "slow only together, each with other partners: a cable, a switch port or a route between them",
    todo: "check the cables, switch ports and route between the two; each host is fine with its other partners" },
};

const pairKey = (a, b) => (a < b ? `${a}\u0000${b}` : `${b}\u0000${a}`);
const gbs = (bps) => (bps === null || bps === undefined ? "–" : `${(bps / 1e9).toFixed(1)} GB/s`);
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

function hostLink(name) {
  return h("a", { class: "host", href: hostHref(name) }, name);
}

/** The figures of a pair as one line: "16.1 GB/s, 0.35 of 46.0 GB/s expected". */
function figures(p) {
  if (!p) return "no figure";
  if (p.verdict === "failed") return `failed (${gbs(p.expected_bps)} expected)`;
  return `${gbs(p.measured_bps)}, ${fmt.ratio(p.ratio)} of ${gbs(p.expected_bps)} expected`;
}

function pairRow(p, a, b) {
  return h("tr", { "data-pair": `${a}~${b}` },
    h("th", { scope: "row" }, hostLink(a), " ↔ ", hostLink(b)),
    h("td", { class: "num" }, p ? gbs(p.measured_bps) : "–"),
    h("td", { class: "num" }, p ? gbs(p.expected_bps) : "–"),
    h("td", { class: "num" }, p ? fmt.ratio(p.ratio) : "–"),
    h("td", { class: "num" }, p ? gbs(p.baseline_bps) : "–"),
    h("td", {}, p?.measured_at ? `${fmt.time(p.measured_at)} (${fmt.age(p.measured_at)} ago)` : "–"),
    h("td", { class: "mono" }, p?.job ?? "–"));
}

function pairTable(pairs, byKey, label) {
  const heads = ["Pair", "Measured", "Expected", "Ratio", "Baseline", "Measured at", "Pair job"];
  return h("div", { class: "table-wrap" }, h("table", { class: "grid net-pairs", "aria-label": label },
    h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, pairs.map(([a, b]) => pairRow(byKey.get(pairKey(a, b)), a, b)))));
}

function faultCard(f, byKey, highlighted) {
  const cause = CAUSES[f.kind] || { label: f.kind, alert: "", where: "" };
  const [a, b] = f.kind === "path" ? f.subject.split("~") : [];
  const subject = f.kind === "host" ? hostLink(f.subject)
    : f.kind === "path" ? [hostLink(a), " ↔ ", hostLink(b)] : h("b", { class: "mono" }, f.subject);
  const mine = highlighted && f.hosts.includes(highlighted);
  return h("li", { class: `net-fault${mine ? " target" : ""}`, "data-kind": f.kind, "data-subject": f.subject },
    h("p", { class: "fault-head" },
      h("span", { class: "badge v-degraded" }, h("span", { class: "glyph", "aria-hidden": "true" }, "▲"),
        ` ${cause.label} fault`), " ", subject, " ",
      f.resolved ? h("span", { class: "tag sev-warning", title: "the alert this fault raises" }, `! ${cause.alert}`)
        : h("span", { class: "tag", title: "one of its hosts has no other partner yet: no alert" },
          "not yet told apart: no alert"),
      h("span", { class: "muted" }, ` ${plural(f.pairs.length, "slow pair")}, worst ${fmt.ratio(f.ratio)} of expected`)),
    h("p", { class: "fault-why" }, f.reason || cause.where),
    cause.todo ? h("p", { class: "fault-todo" }, h("b", {}, "What to do: "), cause.todo) : null,
    pairTable(f.pairs, byKey, `Slow pairs of ${cause.label.toLowerCase()} ${f.subject}`));
}

function faultsSection(answer, byKey, highlighted) {
  const open = answer.faults;
  const body = open.length
    ? h("ol", { class: "net-faults" }, open.map((f) => faultCard(f, byKey, highlighted)))
    : h("p", { class: "ok-line" }, h("span", { class: "badge v-healthy" }, "✓ no fault"),
      ` no slow host pair in the newest ${answer.test || "results"}`);
  return [h("h2", {}, `Faults (${open.length})`), body];
}

function suspectsSection(answer, highlighted) {
  if (!answer.suspects.length) return [];
  const slowWith = (host) => answer.pairs.filter((p) => (p.host === host || p.peer_host === host)
    && (p.verdict === "degraded" || p.verdict === "failed"));
  return [h("h2", {}, `Suspects (${answer.suspects.length})`),
    h("p", { class: "muted" }, "Ends of a slow pair not told apart yet (no other partner, or its other pairs " +
      "were measured before it): the planner tests them with new partners first."),
    h("ul", { class: "net-suspects" }, answer.suspects.map((host) => h("li", {
      "data-host": host, class: host === highlighted ? "target" : null },
    hostLink(host), " is slow with ", slowWith(host).map((p, i) => {
      const other = p.host === host ? p.peer_host : p.host;
      return [i ? "; " : "", h("b", {}, other), `: ${figures(p)}`];
    }))))];
}

/** Hosts grouped by leaf (map order), hosts off the map last. */
function hostGroups(answer, map) {
  const leafOf = new Map(map.hosts.map((x) => [x.host, x.leaf]));
  for (const p of answer.pairs) {
    for (const host of [p.host, p.peer_host]) if (!leafOf.has(host)) leafOf.set(host, OFF_MAP);
  }
  const groups = new Map();
  for (const [host, leaf] of [...leafOf].sort((x, y) => (x[1] === OFF_MAP) - (y[1] === OFF_MAP)
    || x[1].localeCompare(y[1]) || x[0].localeCompare(y[0]))) {
    groups.set(leaf, [...(groups.get(leaf) || []), host]);
  }
  return [...groups];
}

function cellTitle(p, a, b, test) {
  const lines = [`${a} ↔ ${b} · ${p.test || test}`,
    `${verdictOf(p.verdict === "failed" ? "down" : p.verdict).glyph} ${p.verdict}: ${p.reason}`,
    `measured ${gbs(p.measured_bps)} · expected ${gbs(p.expected_bps)} · ratio ${fmt.ratio(p.ratio)}`,
    `baseline ${gbs(p.baseline_bps)} · fleet peers ${gbs(p.fleet_bps)}`,
    `measured at ${p.measured_at ? `${fmt.time(p.measured_at)} (${fmt.age(p.measured_at)} ago)` : "–"}`,
    `pair job ${p.job ?? "–"}`];
  if (p.cause) lines.push(`cause: ${p.cause.replace(":", " ")}`);
  return lines.join("\n");
}

/** One cell: its colour from the ratio (healthy never below the scale's blue, slow never
 * above its orange), its glyph and GB/s; untested and unknown pairs grey, never a colour. */
function cell(p, a, b, test, leafStart, hl) {
  const cls = ["net-cell", leafStart ? "leaf-start" : null, hl ? "hl" : null].filter(Boolean);
  const base = { "data-host": a, "data-peer": b };
  if (a === b) return h("td", { ...base, class: [...cls, "self"].join(" "), title: `${a} (itself)` }, "—");
  if (!p) {
    return h("td", { ...base, class: [...cls, "untested"].join(" "), "data-verdict": "untested",
      title: `${a} ↔ ${b}: never tested (no ${test} result in the last 7 days)` }, "·");
  }
  const slow = p.verdict === "degraded" || p.verdict === "failed";
  const known = slow || (p.verdict === "healthy" && p.ratio !== null);
  const attrs = { ...base, "data-verdict": p.verdict, title: cellTitle(p, a, b, test) };
  if (!known) return h("td", { ...attrs, class: [...cls, "unknown"].join(" ") }, "?");
  const ratio = p.verdict === "failed" ? 0 : slow ? Math.min(p.ratio ?? 0, 0.75) : Math.max(p.ratio, RATIO_BLUE_FROM);
  const bg = ratioColour(ratio);
  const glyph = p.verdict === "failed" ? "✕" : slow ? "▲" : "";
  const text = p.verdict === "failed" ? "✕" : `${glyph}${glyph ? " " : ""}${(p.measured_bps / 1e9).toFixed(0)}`;
  return h("td", { ...attrs, class: cls.join(" "), style: `background:${bg};color:${textOn(bg)}` }, text);
}

function matrixTable(groups, byKey, test, highlighted) {
  const hosts = groups.flatMap(([leaf, names]) => names.map((n, i) => ({ host: n, leaf, start: i === 0 })));
  const mark = (host) => (host === highlighted ? " target" : "");
  // The first column (the row's host) stays pinned while the matrix scrolls sideways.
  const leafRow = h("tr", {}, h("th", { scope: "col", class: "corner" }, "leaf →"),
    groups.map(([leaf, names]) => h("th", { scope: "colgroup", colspan: names.length, class: "leaf-start leaf" }, leaf)));
  const hostRow = h("tr", {}, h("th", { scope: "col" }, "host ↓ × →"),
    hosts.map((c) => h("th", { scope: "col", class: `col-host${c.start ? " leaf-start" : ""}${mark(c.host)}`,
      "data-host": c.host }, h("a", { href: hostHref(c.host), class: "host" }, c.host))));
  const rows = groups.flatMap(([leaf, names]) => [
    h("tr", { class: "leaf-row" }, h("th", { scope: "rowgroup", class: "leaf" }, leaf),
      h("td", { colspan: hosts.length, class: "leaf-gap" })),
    ...names.map((host) => h("tr", { "data-host": host, class: mark(host).trim() || null },
      h("th", { scope: "row", class: `row-host${mark(host)}` }, hostLink(host)),
      hosts.map((c) => cell(byKey.get(pairKey(host, c.host)), host, c.host, test, c.start,
        highlighted !== null && (host === highlighted || c.host === highlighted)))))]);
  return h("table", { class: "net-matrix", "aria-label": "Host pairs by leaf" },
    h("thead", {}, leafRow, hostRow), h("tbody", {}, rows));
}

function legend() {
  const swatch = (bg, text, words, cls = "") => h("span", { class: "legend-item" },
    h("span", { class: `swatch ${cls}`, style: bg ? `background:${bg};color:${textOn(bg)}` : null, "aria-hidden": "true" }, text),
    ` ${words}`);
  return [h("p", { class: "net-legend muted" }, "Cells: GB/s measured, coloured by measured / expected: ",
    swatch(ratioColour(1), "46", "as expected"), swatch(ratioColour(0.6), "▲ 28", "slow"),
    swatch(ratioColour(0), "✕", "failed"), swatch(null, "·", "never tested", "untested"),
    swatch(null, "?", "no reference (off the map)", "unknown"),
    h("span", {}, "(a slow pair never blue, a healthy one never orange)")),
  h("p", { class: "muted net-hover" }, "Hover a cell for its figures, expected, baseline, when it was measured " +
    "and by which pair job.")];
}

function counts(answer, groups) {
  const n = (v) => answer.pairs.filter((p) => p.verdict === v).length;
  const hosts = groups.reduce((s, [, names]) => s + names.length, 0);
  const possible = (hosts * (hosts - 1)) / 2;
  return [h("span", { class: "chip" }, `${plural(hosts, "host")} on ${plural(groups.length, "leaf")}`.replace("leafs", "leaves")),
    h("span", { class: "chip v-healthy" }, `✓ ${n("healthy")} healthy`),
    h("span", { class: "chip v-degraded" }, `▲ ${n("degraded") + n("failed")} slow`),
    h("span", { class: "chip v-unknown" }, `? ${n("unknown") + Math.max(0, possible - answer.pairs.length)} untested or unknown`),
    h("span", { class: "muted" }, `judged ${fmt.time(answer.generated_at)}`)];
}

/** What the URL asks that this page cannot follow, each named and ignored. */
function urlNotices(params, known) {
  const lines = [];
  if (params.test && !NET_TESTS.includes(params.test)) {
    lines.push(`There is no host-pair test "${params.test}"; showing ${DEFAULT_TEST} (tests: ${NET_TESTS.join(", ") || "none"}).`);
  }
  if (params.host && known && !known.has(params.host)) {
    lines.push(`${params.host} is not on the network map and has no host-pair result: nothing highlighted.`);
  }
  return lines;
}

export function mount(root, route) {
  let params = route.params;
  let answer = null, map = null;
  const head = h("div", { class: "page-head" });
  const notices = h("div", { class: "notices", id: "network-notices" });
  const faults = h("section", { class: "panel", id: "network-faults" });
  const suspects = h("section", { class: "panel", id: "network-suspects", hidden: true });
  const matrix = h("section", { class: "panel", id: "network-matrix" });
  replace(root, head, notices, faults, suspects, matrix);

  const test = () => (NET_TESTS.includes(params.test) ? params.test : DEFAULT_TEST);

  function render() {
    const byKey = new Map(answer.pairs.map((p) => [pairKey(p.host, p.peer_host), p]));
    const groups = hostGroups(answer, map);
    const known = new Set(groups.flatMap(([, names]) => names));
    const highlighted = known.has(params.host) ? params.host : null;
    replace(head, h("h1", {}, "Network between hosts"), counts(answer, groups));
    replace(notices, urlNotices(params, known).map((t) => h("p", { class: "notice", role: "status" }, `⚠ ${t}`)));
    replace(faults, faultsSection(answer, byKey, highlighted));
    suspects.hidden = !answer.suspects.length;
    replace(suspects, suspectsSection(answer, highlighted));
    replace(matrix, h("div", { class: "panel-head" }, h("h2", {}, `Host pairs · ${test()}`),
      highlighted ? h("span", { class: "chip target-chip" }, `highlighting ${highlighted}`) : null),
    legend(),
    known.size ? h("div", { class: "table-wrap net-matrix-wrap" }, matrixTable(groups, byKey, test(), highlighted))
      : h("p", { class: "muted" }, "No host pairs yet: put the network map (PUT /api/v1/network/hosts) and let " +
        "`peerwatch pairs` run pair jobs (docs/network.md)."));
  }

  let shownHost = null; // the highlighted host last scrolled to

  function showHost() {
    if (!params.host || params.host === shownHost) return;
    shownHost = params.host;
    root.querySelector(".net-matrix tr.target")?.scrollIntoView({ block: "nearest" });
  }

  async function load() {
    [answer, map] = await Promise.all([api.networkPairs(test()), api.networkHosts()]);
    render();
    showHost();
  }

  return {
    refresh: load,
    async update(next) {
      const before = test();
      params = next.params;
      if (!answer || before !== test()) await load();
      else {
        render();
        showHost();
      }
    },
    title: () => {
      if (!answer) return "Network";
      const n = answer.faults.length;
      return `Network · ${n ? plural(n, "fault") : "no fault"}`;
    },
    destroy() {},
  };
}

/** The fleet page's line: how many network faults, linking here (nothing without pairs). */
export async function networkSummary() {
  let answer;
  try {
    answer = await api.networkPairs(DEFAULT_TEST);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    return null; // an older server without the network: the fleet still shows
  }
  if (!answer.pairs.length) return null;
  const n = answer.faults.length;
  const slow = answer.pairs.filter((p) => p.verdict === "degraded" || p.verdict === "failed").length;
  const words = answer.faults.map((f) => `${CAUSES[f.kind]?.label.toLowerCase() ?? f.kind} ${f.subject.replace("~", " ↔ ")}`);
  return h("p", { class: "network-summary", id: "network-summary" },
    h("a", { href: networkHref() }, "Network"), ": ",
    n ? h("span", { class: "badge v-degraded" }, h("span", { class: "glyph", "aria-hidden": "true" }, "▲"),
      ` ${plural(n, "fault")}`) : h("span", { class: "badge v-healthy" }, "✓ no fault"),
    ` · ${plural(answer.pairs.length, "host pair")} judged, ${slow} slow`,
    words.length ? h("span", { class: "muted" }, ` · ${words.join("; ")}`) : null);
}

/** Whether a slow pair is put down to its other end: triangulation's `host:<other>` cause. */
function theirs(pair, host) {
  return Boolean(pair.cause?.startsWith("host:")) && pair.cause !== `host:${host}`;
}

/** The host page's line: this host's network verdict, linking to the matrix with it outlined;
 * null for a host without cross-host results. A stale host's is "unknown" with what it was
 * last known as: unknown is never green. */
export function hostNetworkLine(host, answer, stale = false) {
  if (!answer) return null;
  const mine = answer.pairs.filter((p) => p.host === host || p.peer_host === host);
  if (!mine.length) return null;
  const fault = answer.faults.find((f) => f.hosts.includes(host));
  const slow = mine.filter((p) => p.verdict === "degraded" || p.verdict === "failed");
  const suspect = answer.suspects.includes(host);
  let verdict = "healthy", words = `all ${plural(mine.length, "tested partner")} as expected`;
  if (fault) {
    verdict = "degraded";
    words = `${CAUSES[fault.kind]?.label.toLowerCase() ?? fault.kind} fault ${fault.subject.replace("~", " ↔ ")}: ` +
      `${CAUSES[fault.kind]?.where ?? fault.reason}`;
  } else if (slow.length && slow.every((p) => theirs(p, host))) {
    // every slow pair is put down to its other end's fault: that host's page, not this one's
    const others = [...new Set(slow.map((p) => p.cause.slice("host:".length)))];
    words = `slow only with ${others.join(", ")}, whose own path is at fault ` +
      `(${plural(mine.length - slow.length, "other partner")} as expected)`;
  } else if (slow.length) {
    verdict = "degraded";
    words = `slow with ${slow.map((p) => (p.host === host ? p.peer_host : p.host)).join(", ")}`;
  } else if (mine.every((p) => p.verdict === "unknown")) {
    verdict = "unknown";
    words = "no reference to judge its pairs by";
  }
  if (suspect) words += "; a suspect: tested with new partners first";
  if (stale) {
    words = `last known ${verdict}: ${words}`;
    verdict = "unknown";
  }
  const glyph = verdictOf(verdict).glyph;
  return h("p", { class: "network-line", id: "network-line" }, h("b", {}, "Network: "),
    h("span", { class: `badge v-${verdict}` }, h("span", { class: "glyph", "aria-hidden": "true" }, glyph), ` ${verdict}`),
    ` ${words} (${plural(mine.length, "host pair")} · `,
    h("a", { href: networkHref({ host }) }, "see it on the network matrix"), ")");
}
