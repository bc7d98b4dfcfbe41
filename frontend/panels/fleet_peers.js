// Fleet peers: each peer group (GPU model, topology or PCIe link, driver) per test with its
// median, low percentile and size, the pairs (or GPUs, for h2d/d2h/local: src = dst) far
// below it, and drivers slower than their siblings (docs/fleet-peers.md). Read from
// GET /api/v1/fleet/peers; nothing is judged here.

import { api } from "../shared/api.js";
import { h, replace } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { hostHref } from "../shared/router.js";

function belowCell(g) {
  if (!g.eligible) return h("span", { class: "muted" }, g.why_not);
  if (!g.below.length) return h("span", { class: "muted" }, "none");
  return g.below.map((b) => {
    const own = b.src === b.dst; // a GPU's own test (h2d, d2h, local)
    return h("a", { class: "tag peer-below", title: `${fmt.value(b.value, g.unit)} vs median ${fmt.value(g.median, g.unit)}`,
      href: hostHref(b.host, own ? { gpu: b.src } : { test: g.test, pair: `${b.src}-${b.dst}` }) },
    `${b.host} ${own ? `GPU${b.src}` : fmt.pair(b.src, b.dst)} ${fmt.ratio(b.ratio)}`);
  });
}

function groupRow(g) {
  return h("tr", { class: g.eligible ? null : "muted-row", "data-group": `${g.gpu_model}|${g.topology}|${g.driver}|${g.test}` },
    h("td", {}, `${g.gpu_model} · ${g.topology}`), h("td", {}, g.driver), h("td", {}, g.test),
    h("td", { class: "num" }, fmt.value(g.median, g.unit)), h("td", { class: "num" }, fmt.value(g.low, g.unit)),
    h("td", { class: "num" }, String(g.hosts)), h("td", { class: "num" }, String(g.pairs)),
    h("td", { class: "reason" }, belowCell(g)));
}

function groupTable(groups, label) {
  return h("table", { class: "peer-table", "aria-label": label },
    h("thead", {}, h("tr", {}, ["Group", "Driver", "Test", "Median", "Low", "Hosts", "Pairs / GPUs", "Far below peers"]
      .map((c) => h("th", {}, c)))),
    h("tbody", {}, groups.map(groupRow)));
}

function siblingsList(siblings) {
  const flagged = siblings.filter((s) => s.flagged);
  if (!siblings.length) return h("p", { class: "muted" }, "No model and topology runs under two drivers with enough hosts each: no sibling comparison.");
  if (!flagged.length) return h("p", { class: "muted" }, `${siblings.length} sibling-driver comparisons, none below the floor.`);
  return h("ul", { class: "sibling-gaps", "aria-label": "Drivers slower than their siblings" },
    flagged.map((s) => h("li", { class: "tag firing" }, `⚠ ${s.text}`)));
}

export function peersPanel() {
  const body = h("div", { class: "fleet-peers" });
  const el = h("section", { class: "panel", "aria-label": "Fleet peers" }, h("h2", {}, "Fleet peers"), body);
  return {
    el,
    async refresh(opts) {
      let data;
      try {
        data = await api.fleetPeers({}, opts);
      } catch (error) {
        if (error.name === "AbortError") throw error;
        replace(body, h("p", { class: "muted" }, `Fleet peers unavailable: ${error.message}`));
        return; // the hosts above still show
      }
      const note = h("p", { class: "muted" }, `Each pair against the same pair on hosts with the same GPU model, topology and driver, and each GPU's own copies (h2d, d2h, local) against the same GPU model on the same PCIe link and driver: below ${fmt.ratio(data.floor)} of its group's median, in a group of at least ${data.min_hosts} hosts, it is degraded. Low = the ${data.low_percentile}th percentile on the slow side.`);
      if (!data.groups.length) {
        replace(body, note, h("p", { class: "muted" }, "No peer groups yet: they are computed by the server's periodic round from judged pairs."));
        return;
      }
      // groups with something to say (a pair far below its peers) first; the rest folded (issue
      // 40: "Fleet peers" was ~90 rows of "none")
      const judging = data.groups.filter((g) => g.eligible && g.below.length);
      const quiet = data.groups.filter((g) => g.eligible && !g.below.length);
      const small = data.groups.filter((g) => !g.eligible);
      replace(body, note, siblingsList(data.siblings),
        judging.length ? h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Peer groups (scrolls)" },
          groupTable(judging, "Peer groups"))
          : h("p", { class: "muted", id: "peers-all-quiet" }, quiet.length
            ? "No pair or GPU is far below its peers." : `No group has ${data.min_hosts} hosts yet: nobody is judged against peers.`),
        quiet.length ? h("details", { class: "quiet-groups" },
          h("summary", {}, `${quiet.length} group${quiet.length === 1 ? "" : "s"} with nobody far below its peers`),
          h("div", { class: "table-wrap", tabindex: 0, role: "region",
            "aria-label": "Peer groups with nobody below (scrolls)" }, groupTable(quiet, "Peer groups with nobody below"))) : null,
        small.length ? h("details", { class: "small-groups" },
          h("summary", {}, `${small.length} groups too small to judge anybody`),
          h("div", { class: "table-wrap", tabindex: 0, role: "region",
            "aria-label": "Peer groups too small to judge (scrolls)" }, groupTable(small, "Peer groups too small to judge"))) : null);
    },
  };
}
