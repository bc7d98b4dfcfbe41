// The host's RDMA NICs (InfiniBand/RoCE) on the host page: one row per port, with its
// verdict, state, rate against the rate of its kind, the judged counters' newest values and
// their growth per second, and each GPU's PCIe path to the NIC (docs/network.md).

import { h, replace } from "../shared/dom.js";
import { badge } from "../shared/palette.js";

const SHOWN = ["symbol_error", "port_rcv_errors", "link_downed", "link_error_recovery",
  "port_xmit_discards", "port_xmit_wait"];

function rateCell(p) {
  if (p.rate_gbps === null || p.rate_gbps === undefined) return h("span", { class: "muted" }, "–");
  const low = p.expected_gbps && p.rate_gbps < p.expected_gbps;
  return h("span", { class: low ? "warn" : null },
    `${p.rate_gbps} Gb/s` + (low ? ` (of ${p.expected_gbps})` : ""));
}

function counterCell(p, name) {
  const value = p.counters?.[name];
  if (value === undefined) return h("span", { class: "muted", title: "not kept by this NIC" }, "–");
  const rate = p.rates?.[name];
  const moving = rate !== null && rate !== undefined && rate > 0;
  return h("span", { class: moving ? "warn" : null, title: moving ? `+${rate.toPrecision(3)}/s` : "not rising" },
    String(value), moving ? h("span", { class: "muted" }, ` +${rate.toPrecision(2)}/s`) : null);
}

function pathsCell(nic) {
  const entries = Object.entries(nic.gpu_paths || {});
  if (!entries.length) return h("span", { class: "muted" }, "–");
  return entries.map(([g, level]) => h("span", { class: level === "SYS" || level === "NODE" ? "warn" : null },
    `GPU${g} ${level} `));
}

/** The NIC section: hidden on a host whose probe sent no NICs. */
export function nicsPanel() {
  const body = h("tbody");
  const el = h("section", { class: "panel table-wrap", id: "nics-panel", hidden: true, tabindex: 0,
    role: "region", "aria-label": "RDMA NICs (scrolls)" },
    h("div", { class: "panel-head" }, h("h2", {}, "RDMA NICs"),
      h("span", { class: "muted" }, "counters are lifetime totals: judged by their growth")),
    h("table", { "aria-label": "RDMA NIC ports" },
      h("thead", {}, h("tr", {}, ["NIC", "Port", "Verdict", "State", "Rate", "Layer",
        ...SHOWN, "GPU paths", "Type / firmware"].map((t) => h("th", {}, t)))),
      body));
  function update(nics) {
    el.hidden = !nics || !nics.length;
    const rows = [];
    for (const nic of nics || []) {
      for (const p of nic.ports) {
        rows.push(h("tr", { "data-nic": `${nic.name}/${p.port}` },
          h("td", {}, h("b", {}, nic.name)), h("td", {}, String(p.port)),
          h("td", {}, badge(p.verdict, p.reason)),
          h("td", { title: p.phys_state || "" }, p.state ?? "–"), h("td", {}, rateCell(p)),
          h("td", {}, p.link_layer ?? "–"), ...SHOWN.map((c) => h("td", { class: "num" }, counterCell(p, c))),
          h("td", {}, pathsCell(nic)), h("td", { class: "muted" }, `${nic.hca_type ?? "?"} ${nic.fw_ver ?? ""}`)));
      }
    }
    replace(body, ...rows);
  }
  return { el, update };
}
