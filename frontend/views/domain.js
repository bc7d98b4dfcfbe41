// Domain: one rack-scale NVLink domain (a GB200 NVL72 rack), #/domain/<cluster uuid>.
// The roll-up verdict and its reason, the cliques with the trays a job may span, then a grid of
// trays (rows, each linking to its host page) x GPUs (cells coloured by the GPU's judged
// verdict, worded with its fabric state and health; the clique in its own column).
// `domainsPanel` is the fleet page's list of domains, linking here.

import { api } from "../shared/api.js";
import { h, replace } from "../shared/dom.js";
import { badge, VERDICTS } from "../shared/palette.js";
import { href, hostHref } from "../shared/router.js";

export const domainHref = (id) => href("domain", [id]);
const shortId = (id) => `${id.slice(0, 8)}…`;

function fabricWords(g) {
  const state = g.state === "completed" ? "" : (g.state || "no fabric state").replace(/_/g, " ");
  const health = g.health && g.health !== "healthy" ? g.health.replace(/_/g, " ") : "";
  return [state, health].filter(Boolean).join(", ");
}

function gpuCell(g, stale) {
  const v = !stale && VERDICTS[g.verdict] ? g.verdict : "unknown";
  const words = fabricWords(g);
  const issues = g.health_issues.length ? ` Issues: ${g.health_issues.join(", ")}.` : "";
  const label = `GPU${g.gpu}: ${g.verdict}; fabric ${g.state || "unknown"}, status ` +
    `${g.status || "unknown"}, health ${g.health || "not reported"}, clique ${g.clique_id}.` +
    `${issues} ${stale ? `last known (the tray stopped reporting): ${g.verdict} — ${g.reason}` : g.reason}`;
  return h("td", { class: `gpu-cell v-${v}`, title: label, "aria-label": label,
    "data-gpu": g.gpu, "data-verdict": v, "data-state": g.state || "" },
  h("span", { class: "glyph", "aria-hidden": "true" }, VERDICTS[v].glyph),
  ` GPU${g.gpu}`, words ? h("span", { class: "fabric-words" }, words) : null);
}

function cliqueOf(tray) {
  const ids = [...new Set(tray.gpus.map((g) => g.clique_id))];
  return ids.join(", ");
}

function trayRow(tray, width, mainClique) {
  const clique = cliqueOf(tray);
  const apart = clique !== String(mainClique);
  // A stale tray's GPUs are unknown now: grey, "last known at …", never green.
  const cells = tray.gpus.map((g) => gpuCell(g, tray.stale));
  while (cells.length < width) cells.push(h("td", { class: "gpu-cell empty" }, "—"));
  return h("tr", { "data-host": tray.host },
    h("th", { scope: "row" }, h("a", { href: hostHref(tray.host), class: "host" }, tray.host),
      tray.stale ? h("span", { class: "tag stale" }, "◌ stale") : null),
    h("td", {}, badge(tray.stale ? "unknown" : tray.verdict, tray.reason)),
    h("td", { class: `clique${apart ? " apart" : ""}`, title: apart
      ? `clique ${clique}: not the domain's largest (${mainClique})` : `clique ${clique}` }, clique),
    cells);
}

function trayGrid(d) {
  const width = Math.max(0, ...d.trays.map((t) => t.gpus.length));
  const main = d.cliques[0]?.clique_id;
  const heads = Array.from({ length: width }, (_, i) => h("th", { scope: "col" }, `GPU${i}`));
  return h("table", { class: "tray-grid", "aria-label": "Trays by GPU" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Tray (host)"),
      h("th", { scope: "col" }, "Verdict"), h("th", { scope: "col" }, "Clique"), heads)),
    h("tbody", {}, d.trays.map((t) => trayRow(t, width, main))));
}

function cliqueList(d) {
  return h("ul", { class: "clique-list" }, d.cliques.map((c) => h("li", {
    "data-clique": c.clique_id },
  h("b", {}, `clique ${c.clique_id}`), `: ${trays(c.hosts.length)}, ${c.healthy_gpus} of ` +
    `${c.gpus} GPUs healthy; a job may span `,
  c.job_span.length ? h("span", { class: "span-hosts" }, `${trays(c.job_span.length)} (` +
    `${c.job_span.join(", ")})`) : h("span", { class: "muted" }, "no tray"))));
}

const trays = (n) => `${n} tray${n === 1 ? "" : "s"}`;

/** Chips "fabric: 68 completed", "health: 1 unhealthy" from {state: GPUs}. */
function counts(what, map) {
  return Object.entries(map).map(([k, n]) => h("span", { class: "chip", title: `GPUs by fabric ${what}` },
    `${what}: ${n} ${k.replace("_", " ")}`));
}

export function mount(root, route) {
  const id = route.args[0] || "";
  const head = h("div", { class: "page-head" });
  const reason = h("p", { class: "domain-reason" });
  const cliques = h("section", { class: "panel" });
  const grid = h("section", { class: "panel table-wrap" });
  replace(root, head, reason, cliques, grid);

  function render(d) {
    replace(head, h("h1", {}, "NVLink domain ", h("code", { title: d.id }, shortId(d.id))),
      badge(d.verdict, d.reason), h("span", { class: "chip" }, trays(d.tray_count)),
      h("span", { class: "chip" }, `${d.gpu_count} GPUs`), counts("state", d.fabric_states),
      counts("health", d.fabric_health));
    reason.textContent = d.reason;
    replace(cliques, h("h2", {}, "Cliques"), cliqueList(d));
    replace(grid, h("h2", {}, "Trays × GPUs"), trayGrid(d));
  }

  let shownDomain = null;
  return {
    async refresh() {
      shownDomain = await api.domain(id);
      render(shownDomain);
    },
    title: () => (shownDomain ? `NVLink domain ${shortId(shownDomain.id)} · ${shownDomain.verdict}`
      : `NVLink domain ${shortId(id)}`),
    async update() {},
    destroy() {},
  };
}

/** The fleet page's section: one line per domain, linking to its page (nothing when none). */
export function domainsPanel(domains) {
  if (!domains.length) return [];
  return [h("h2", {}, "NVLink domains"), h("ul", { class: "domain-list" }, domains.map((d) =>
    h("li", { "data-domain": d.id }, badge(d.verdict, d.reason), " ",
      h("a", { href: domainHref(d.id), class: "domain-link" }, `domain ${shortId(d.id)}`),
      ` (${d.cliques.length} clique${d.cliques.length === 1 ? "" : "s"}): `,
      h("span", { class: "muted" }, d.reason))))];
}
