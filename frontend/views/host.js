// Host: one machine's fabric. Topology graph and bandwidth matrix side by side, the selected
// pair's history under them, then link counters and the GPU inventory. The URL holds the test,
// the pair and the time range (#/host/<name>?test=ce_write&pair=3-5&range=24h).

import { api, TESTS, unitOf } from "../shared/api.js";
import { activatable, h, replace } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { gpuTestsTable } from "../panels/gpu_tests.js";
import { inventoryRows, inventoryTable } from "../panels/inventory.js";
import { jobsPanel } from "../panels/jobs.js";
import { eventsPanel } from "../panels/host_events.js";
import { downLinks, errorFigure, throughputFigure } from "../charts/links.js";
import { matrixChart, matrixLegend } from "../charts/matrix.js";
import { activeMaintenance, maintenanceTag } from "../panels/maintenance.js";
import { drainMarks, drainTags } from "../panels/drain.js";
import { badge, verdictOf } from "../shared/palette.js";
import { draw, plotly, purge } from "../charts/plot.js";
import { href, updateParams } from "../shared/router.js";
import { hostAlertPeriods, pairProblems } from "../panels/host_problems.js";
import { seriesFigure } from "../charts/series.js";
import { jobLinks } from "./job.js";
import { linkNotices, scrollToTarget } from "../panels/host_links.js";
import { hostFaults, topFault } from "../shared/faults.js";
import { hostBadge, maintenanceBadge, severityTag, worstFiring } from "../shared/severity.js";
import { staleHealth, staleMatrix, staleTopology } from "../shared/stale.js";
import { topologyFigure } from "../charts/topology.js";
import { CROSSHAIR, csvButton, eventMarks, linkCrosshair, linkZoom, rangeBar, windowOf } from "../charts/timeline.js";
import { hostEvents, loadingSources } from "../charts/marks.js";
import { topologyList } from "../panels/topology_list.js";

const PROBLEMS_SHOWN = 6;
const SLOW_EVERY = 4; // refreshes between loads of what changes slowly

function parsePair(text) {
  const m = /^(\d+)-(\d+)$/.exec(text || "");
  return m ? [Number(m[1]), Number(m[2])] : null;
}

/** The page's time window (timeline.js): `?from=&to=`, or the last `?range=`. */
function window_(params) {
  const { since, until } = windowOf(params);
  return { since, until };
}

function select(label, options, value, onChange) {
  const el = h("select", { "aria-label": label },
    options.map((o) => h("option", { value: o, selected: o === value }, o)));
  el.addEventListener("change", () => onChange(el.value));
  return el;
}


export function mount(root, route) {
  const name = route.args[0] || "";
  let params = route.params;
  const data = {};
  const failed = {}; // panel -> why its last refresh failed
  const goodAt = {}; // panel -> when it last loaded
  let refreshes = 0;
  const el = {
    head: h("div", { class: "page-head host-head" }),
    notices: h("div", { class: "notices", id: "link-notices" }),
    problems: h("div", { class: "problems" }),
    rangeBar: h("div", { class: "panel range-panel", id: "range-bar" }),
    healthNote: h("div"), topoNote: h("div"), matrixNote: h("div"), linksNote: h("div"), pairNote: h("div"),
    topo: h("div", { class: "chart", id: "topology-chart", role: "figure",
      "aria-label": "Topology graph: GPUs, NVSwitch fabric and CPU sockets; edge colour is its verdict" }),
    topoList: h("div", { class: "topo-list", id: "topology-list" }),
    matrix: h("div", { class: "chart", id: "matrix-chart" }),
    live: h("p", { class: "sr-only", "aria-live": "polite" }),
    gpuTests: h("div", { id: "gpu-tests" }),
    testPick: h("span"),
    pairHead: h("div", { class: "panel-head" }),
    series: h("div", { class: "chart", id: "series-chart", role: "figure",
      "aria-label": "Pair history: measured bandwidth per bucket against expected and baseline" }),
    pairFacts: h("p", { class: "facts" }),
    linksHead: h("div", { class: "panel-head" }),
    throughput: h("div", { class: "chart", id: "throughput-chart", role: "figure",
      "aria-label": "NVLink throughput, TX per GPU over time" }),
    errors: h("div", { class: "chart", id: "errors-chart", role: "figure",
      "aria-label": "Judged NVLink error rates over time" }),
    infoErrors: h("div", { class: "chart", id: "info-errors-chart", role: "figure",
      "aria-label": "Corrected NVLink error rates over time (informational)" }),
    probeErrors: h("div"),
  };
  const pairPanel = h("section", { class: "panel", id: "pair-panel", hidden: true },
    el.pairHead, el.pairNote, el.series, el.pairFacts);
  const inventory = inventoryTable(() => params.gpu ?? null);
  const matrix = matrixChart(el.matrix, el.live, (src, dst) => pickPair(src, dst));
  const jobs = jobsPanel(name);
  const xids = eventsPanel(name); // Xid/SXid events: a list and marks on the time charts

  replace(root, el.head, el.notices, el.healthNote, el.problems,
    h("div", { class: "two-col" },
      h("section", { class: "panel", id: "topology-panel" }, h("div", { class: "panel-head" }, h("h2", {}, "Topology"),
        h("span", { class: "muted" }, "NVLink solid (width = NV#) · PCIe dotted (path level)")), el.topoNote,
      el.topo, el.topoList),
      h("section", { class: "panel", id: "matrix-panel" }, h("div", { class: "panel-head" },
        h("h2", {}, "Bandwidth matrix"), el.testPick, matrixLegend()), el.matrixNote, el.matrix, el.live,
        el.gpuTests)),
    el.rangeBar, pairPanel,
    h("section", { class: "panel" }, el.linksHead, el.linksNote,
      h("div", { class: "two-col" }, el.throughput, el.errors), el.infoErrors),
    xids.el, jobs.el,
    h("section", { class: "panel table-wrap" }, h("div", { class: "panel-head" }, h("h2", {}, "Inventory")),
      inventory.el),
    el.probeErrors);

  const test = () => (TESTS.includes(params.test) ? params.test : TESTS[0]);
  const rangeKey = (p) => `${p.range}|${p.from}|${p.to}`;

  const timeCharts = () => [el.series, el.throughput, el.errors, el.infoErrors];
  /** One zoom and one crosshair across the time charts drawn so far. */
  function linkTimeCharts() {
    linkZoom(timeCharts);
    linkCrosshair(timeCharts);
  }

  /** Each mark source's own data (marks.js), by its kind; a failed one marks nothing. */
  async function loadMarks() {
    const loaded = await Promise.all(loadingSources().map(async (s) =>
      [s.kind, await part(`marks-${s.kind}`, () => s.load(name, window_(params)))]));
    return Object.fromEntries(loaded);
  }

  /** A time figure with the host's events marked on it and a crosshair. */
  function marked(fig, since, until) {
    const events = hostEvents({ health: data.health, alerts: data.alerts, maintenance: data.maintenance,
      jobEvents: [...jobs.events(), ...xids.events()] }, data.marks || {});
    const marks = eventMarks(events, since, until);
    const layout = { ...fig.layout, shapes: [...(fig.layout.shapes || []), ...marks.shapes],
      annotations: [...(fig.layout.annotations || []), ...marks.labels],
      xaxis: { ...fig.layout.xaxis, ...CROSSHAIR } };
    return { data: fig.data, layout };
  }

  function pickPair(src, dst, testName = test()) {
    updateParams({ pair: `${src}-${dst}`, test: testName }, { push: true });
  }

  function alertChip() {
    if (!data.alerts) return h("span", { class: "tag", title: "the alerts API did not answer" }, "alerts: ?");
    const firing = data.alerts.filter((a) => a.state === "firing").length;
    const pending = data.alerts.filter((a) => a.state === "pending").length;
    if (!firing && !pending) return null;
    return h("a", { class: `chip${firing ? " firing" : ""}`, href: href("alerts", [], { host: name }) },
      `● ${firing} firing`, pending ? `, ${pending} pending` : "");
  }

  /** What the page shows: the API's verdicts, or, for a stale host, "unknown, last known …". */
  function shown(key) {
    const at = data.detail.last_report_at;
    if (!data.detail.stale || !data[key]) return data[key];
    return { health: staleHealth, topology: staleTopology, matrix: staleMatrix }[key](data[key], at);
  }

  function renderHead() {
    const d = data.detail, hl = shown("health");
    root.classList.toggle("stale", Boolean(d.stale));
    const sweep = d.last_sweep;
    replace(el.head,
      h("h1", {}, h("span", { class: "host" }, d.host)),
      hl ? hostBadge(hl.verdict, hl.reason, d.stale) : null,
      d.stale ? h("span", { class: "tag stale" }, `◌ stale: last known at ${fmt.time(d.last_report_at)}`) : null,
      severityTag(worstFiring(data.alerts)), maintenanceBadge(data.maintenance),
      maintenanceTag(data.maintenance),
      ...drainTags(data.drain),
      alertChip(), hl ? topLine(hl) : null,
      hl ? h("p", { class: "reason-line" }, hl.reason,
        hl.since && hl.verdict !== "healthy" ? h("span", { class: "muted since" }, ` — ${hl.verdict} ${fmt.since(hl.since)}`) : null) : null,
      h("p", { class: "meta" }, [
        `fabric ${d.fabric}`, `driver ${d.driver_version ?? "–"}`, `CUDA ${d.cuda_version ?? "–"}`,
        `probe ${d.probe_version ?? "–"}`, `last report ${fmt.age(d.last_report_at)} ago`,
        sweep ? `last sweep ${fmt.age(sweep.finished_at)} ago: ${sweep.gpu_time_s.toFixed(2)} s GPU, ` +
          `${sweep.wall_time_s.toFixed(1)} s wall, ${fmt.bytes(sweep.device_memory_bytes_max)} peak` : "no sweep yet",
      ].map((t) => h("span", {}, t))));
    replace(el.testPick, select("Test", TESTS, test(), (t) => updateParams({ test: t })));
    replace(el.rangeBar, rangeBar(params, (changes) => updateParams(changes)));
  }

  /** The most urgent fault, as on the host's fleet row ("+N more" below it). */
  function topLine(hl) {
    const top = topFault(hostFaults({ host: name, verdict: hl.verdict, reason: hl.reason, since: hl.since },
      data.alerts));
    if (!top) return null;
    return h("p", { class: "top-line", "data-scope": top.fault.scope },
      h("b", {}, data.detail.stale ? `last known at ${fmt.time(data.detail.last_report_at)}: ` : "Top fault: "),
      top.fault.text,
      top.fault.start ? h("span", { class: "muted since" }, ` — ${fmt.since(top.fault.start)}`) : null,
      top.more ? h("span", { class: "muted" }, ` +${top.more} more below`) : null);
  }

  function problemItem(p) {
    const li = h("li", { class: `v-${p.verdict}`, "data-what": p.what },
      h("span", { class: "glyph" }, verdictOf(p.verdict).glyph), " ", h("b", {}, p.what), " ", p.reason,
      p.since ? h("span", { class: "muted since" }, ` — ${fmt.since(p.since)}`) : null);
    if (p.pair) {
      li.title = `open ${p.what} ${p.test}`;
      activatable(li, () => pickPair(p.pair[0], p.pair[1], p.test || test()));
    }
    return li;
  }

  function renderProblems() {
    const items = pairProblems(data.health);
    if (data.detail.stale) {
      for (const p of items) p.reason = `last known at ${fmt.time(data.detail.last_report_at)}: ${p.reason}`;
    }
    if (!items.length) {
      replace(el.problems);
      return;
    }
    const open = el.problems.querySelector("details")?.open;
    const shown = items.slice(0, PROBLEMS_SHOWN);
    const rest = items.slice(PROBLEMS_SHOWN);
    replace(el.problems, h("section", { class: "panel" },
      h("div", { class: "panel-head" }, h("h2", {}, `Problems (${items.length})`),
        h("span", { class: "muted" }, "click a pair to open its history")),
      h("ul", { class: "problem-list" }, shown.map(problemItem)),
      rest.length ? h("details", { open: open || null }, h("summary", {}, `${rest.length} more`),
        h("ul", { class: "problem-list" }, rest.map(problemItem))) : null));
  }

  async function renderPair() {
    const pair = parsePair(params.pair);
    pairPanel.hidden = !pair || !data.series;
    if (pairPanel.hidden) return;
    const s = data.series;
    const periods = hostAlertPeriods(data.health, data.alerts, s);
    const swap = h("a", { class: "btn", href: "#", on: { click: (e) => {
      e.preventDefault(); pickPair(pair[1], pair[0]);
    } } }, `⇄ GPU${pair[1]} → GPU${pair[0]}`);
    replace(el.pairHead, h("h2", {}, `${fmt.pair(pair[0], pair[1])} · ${s.test}`), swap,
      h("span", { class: "muted" }, `${s.source} · step ${s.step_s} s`),
      csvButton(el.series, () => `${name}-GPU${pair[0]}-GPU${pair[1]}-${s.test}`));
    const cell = shown("matrix")?.cells.find((c) => c.src === pair[0] && c.dst === pair[1]);
    replace(el.pairFacts, cell ? [badge(cell.verdict, cell.reason), " ", cell.reason] : "",
      ...jobLinks(s.jobs));
    const { data: traces, layout } = marked(seriesFigure(s, periods), s.since, s.until);
    await draw(el.series, traces, layout);
    linkTimeCharts();
  }

  async function renderLinks() {
    const ls = data.links;
    if (!ls) return;
    const down = downLinks(data.detail.nvlinks);
    const ports = data.detail.nvlinks.length;
    replace(el.linksHead, h("h2", {}, "Links"),
      down.length ? h("span", { class: "chip v-down", id: "down-links" }, `✕ down: ${down.join(", ")}`)
        : ports ? h("span", { class: "chip v-healthy" }, `✓ all ${ports} NVLink ports up`)
          : h("span", { class: "chip" }, "no NVLink: PCIe only"),
      h("span", { class: "muted" }, `${fmt.time(ls.since)} – ${fmt.time(ls.until)}`),
      csvButton(el.throughput, () => `${name}-nvlink-throughput`), csvButton(el.errors, () => `${name}-link-errors`),
      csvButton(el.infoErrors, () => `${name}-corrected-errors`));
    const t = marked(throughputFigure(ls), ls.since, ls.until);
    const e = marked(errorFigure(ls), ls.since, ls.until);
    const i = marked(errorFigure(ls, true), ls.since, ls.until);
    await Promise.all([draw(el.throughput, t.data, t.layout), draw(el.errors, e.data, e.layout),
      draw(el.infoErrors, i.data, i.layout)]);
    linkTimeCharts();
  }

  function renderProbeErrors() {
    const errors = data.detail.last_sweep?.errors || [];
    const skipped = Object.entries(data.detail.last_sweep?.skipped_gpus || {});
    if (!errors.length && !skipped.length) {
      replace(el.probeErrors);
      return;
    }
    replace(el.probeErrors, h("section", { class: "panel" },
      h("div", { class: "panel-head" }, h("h2", {}, "Last sweep: errors and skipped GPUs")),
      h("ul", { class: "problem-list" },
        skipped.map(([gpu, why]) => h("li", {}, h("b", {}, `GPU${gpu} skipped`), " ", why)),
        errors.map((e) => h("li", {}, h("b", { class: "mono" }, e.where), " ", e.message)))));
  }

  /** The selected pair's series; a pair the API does not know is a notice, never a blank page. */
  async function loadPair() {
    const pair = parsePair(params.pair);
    data.seriesError = null;
    try {
      data.series = pair ? await api.series(name, { src: pair[0], dst: pair[1], test: test(), ...window_(params) }) : null;
    } catch (error) {
      if (!error.status || error.status >= 500) throw error; // no answer: the panel's own note
      data.series = null;
      data.seriesError = error.detail;
    }
    return data.series;
  }

  function renderNotices() {
    const lines = linkNotices(params, data.detail, parsePair(params.pair), data.seriesError, TESTS);
    replace(el.notices, lines.map((t) => h("p", { class: "notice", role: "status" }, `⚠ ${t}`)));
  }

  /** This host's alerts, active and (`resolved`: asked again) resolved ones; null when
   * alerting did not answer: the page still draws. */
  async function hostAlerts(resolved) {
    try {
      const [active, old] = await Promise.all([api.alerts({ host: name }),
        resolved ? api.alerts({ host: name, state: "resolved", limit: 200 }) : data.resolved]);
      data.resolved = old;
      return [...active.alerts, ...(old?.alerts || [])];
    } catch (error) {
      if (error.name === "AbortError") throw error;
      return null;
    }
  }

  /** The matrix of the selected test; empty where no pair was measured (a one-GPU host,
   * whose measured figures are its per-GPU copies beside it), never a failed page. */
  async function loadMatrix() {
    try {
      return await api.matrix(name, test());
    } catch (error) {
      if (error.status !== 404) throw error;
      return { host: name, test: test(), unit: unitOf(test()), gpus: [], cells: [] };
    }
  }

  /**
   * One panel's answer: on failure the panel keeps what it last showed and says why, with the
   * age of its data (`panelNote`); the rest of the page draws as usual. Only the host's own
   * record (`api.host`) failing fails the page.
   */
  async function part(key, load) {
    try {
      const value = await load();
      goodAt[key] = Date.now();
      delete failed[key];
      return value;
    } catch (error) {
      if (error.name === "AbortError") throw error;
      failed[key] = error.status ? `${error.status} ${error.detail || ""}`.trim() : "no answer from the server";
      return data[key] ?? null;
    }
  }

  /**
   * Every refresh asks for what changes with each report (the host, its health, topology,
   * matrix, series, active alerts; unchanged answers come back as bodiless 304s, see
   * app/api/conditional_get.py); what changes slowly (resolved alerts, maintenance windows, job
   * snapshots) only every SLOW_EVERY-th refresh.
   */
  async function loadAll({ first = false } = {}) {
    const full = refreshes % SLOW_EVERY === 0;
    refreshes += 1;
    const known = first ? null : await api.host(name);
    const kept = unchanged(known);
    const again = (key, load) => (kept(key) ? data[key] : part(key, load));
    const [detail, health, topology, mx, alerts, series, maintenance, drain] = await Promise.all([
      known ?? api.host(name), again("health", () => api.health(name)),
      again("topology", () => api.topology(name)), again("matrix", loadMatrix),
      hostAlerts(full && !first), kept("series", seriesKey()) ? data.series : part("series", loadPair),
      full ? activeMaintenance(name) : data.maintenanceMap,
      full ? drainMarks(name) : data.drainMap,
      first ? null : loadBelow(full, false),
      part("events", () => xids.load(window_(params))),
    ]);
    Object.assign(data, { detail, health, topology, matrix: mx, alerts, series,
      maintenanceMap: maintenance, maintenance: maintenance?.get(name) ?? null,
      drainMap: drain, drain: drain?.get(name) ?? null });
    loadedAt = { changed: detail.changed_at, stale: detail.stale, series: seriesKey() };
    renderPanelNotes();
  }

  let loadedAt = {}; // the host's changed_at (and stale, and the series' window) last loaded

  /**
   * "Changed since": the host's record says when its judged answers last changed
   * (`changed_at`, app/queries/hosts.py); while it is what the page loaded them at, health,
   * topology and matrix are not asked again (nor the pair series, for the same pair, test
   * and window). A panel whose last load failed is always asked again.
   */
  function unchanged(detail) {
    const same = detail?.changed_at && detail.changed_at === loadedAt.changed
      && detail.stale === loadedAt.stale;
    return (key, window = null) => Boolean(same && !failed[key] && data[key] !== undefined
      && (window === null || window === loadedAt.series));
  }

  const seriesKey = () => `${params.pair}|${test()}|${JSON.stringify(window_(params))}`;

  /** What only the panels below the fold need (link counters, jobs, other mark sources) and
   * (`alerts`) the alerts again with the resolved ones (the pair history's shading);
   * `full`: the slow-changing ones too. */
  async function loadBelow(full, alerts) {
    const [links, , marks, all] = await Promise.all([
      part("links", () => api.linkSeries(name, window_(params))),
      full ? part("jobs", () => jobs.load()) : null,
      full ? loadMarks() : data.marks,
      alerts ? hostAlerts(true) : null,
    ]);
    Object.assign(data, { links, marks });
    if (all) data.alerts = all;
  }

  /** "⚠ topology: could not refresh (500 …); last good data 21:04 (3 min ago)". */
  function panelNote(key, label) {
    if (!failed[key]) return null;
    return h("p", { class: "panel-error", role: "status", "data-panel": key },
      `⚠ ${label}: could not refresh (${failed[key]}); `,
      h("span", { class: "last-good" }, goodAt[key] ? fmt.lastGood(goodAt[key]) : "no data loaded yet"));
  }

  function renderPanelNotes() {
    replace(el.healthNote, panelNote("health", "health"));
    replace(el.topoNote, panelNote("topology", "topology"));
    replace(el.matrixNote, panelNote("matrix", "matrix"));
    replace(el.linksNote, panelNote("links", "link counters"));
    replace(el.pairNote, panelNote("series", "pair history"));
  }

  /** The first view: what fits a screen (header, problems, topology, matrix, the pair)
   * draws first, and the main element is marked drawn; the link counters, the jobs and the
   * resolved alerts' shading load and draw right after, while `root` is `data-pending`. */
  async function firstView() {
    const loading = loadAll({ first: true });
    // plotly.js (1.5 MB, half a second to compile) only once the API calls are on their way:
    // it compiles while the server answers them (draw() reports a failure to load it)
    plotly().catch(() => {});
    await loading;
    await renderAll({ below: false });
    root.dataset.pending = "below the fold";
    below = (async () => {
      try {
        await loadBelow(true, true);
        renderPanelNotes();
        await Promise.all([renderPair(), renderLinks(), jobs.render(window_(params))]);
      } finally {
        delete root.dataset.pending;
      }
    })();
    below.catch(() => {}); // its panels say what failed; the next refresh loads it again
  }

  async function renderAll({ below: lower = true } = {}) {
    renderHead();
    renderNotices();
    renderProblems();
    inventory.setRows(inventoryRows(data.detail, shown("health")));
    replace(el.gpuTests, gpuTestsTable(shown("health")));
    renderProbeErrors();
    const topology = shown("topology");
    const topo = topology ? topologyFigure(topology) : null;
    replace(el.topoList, topology ? topologyList(topology) : null);
    await Promise.all([
      topo ? draw(el.topo, topo.data, topo.layout) : null,
      data.matrix ? matrix.set(shown("matrix"), parsePair(params.pair)) : null,
      xids.render(), renderPair(), lower ? renderLinks() : null, lower ? jobs.render(window_(params)) : null,
    ]);
  }

  let targeted = null; // the pair/GPU/link last scrolled to, so a refresh never scrolls again

  function showTarget() {
    const key = `${params.pair}|${params.gpu}|${params.link}`;
    if (key === targeted) return;
    targeted = key;
    scrollToTarget(root, params, parsePair(params.pair) && data.series ? el.series : null);
  }

  let below = null; // the first view's panels below the fold, loading after its first draw

  return {
    async refresh() {
      if (!data.detail) {
        await firstView();
        showTarget();
        return;
      }
      await below?.catch(() => {});
      await loadAll();
      await renderAll();
      showTarget();
    },
    async update(next) {
      await below?.catch(() => {});
      const before = params;
      params = next.params;
      if (!data.detail) { // the first load failed (e.g. the server was away): load it all now
        await this.refresh();
        return;
      }
      if (before.test !== params.test) data.matrix = await loadMatrix();
      if (rangeKey(before) !== rangeKey(params)) {
        [data.links, data.marks] = await Promise.all([api.linkSeries(name, window_(params)), loadMarks(),
          xids.load(window_(params))]);
        xids.render();
      }
      await loadPair();
      renderHead();
      renderNotices();
      await Promise.all([matrix.set(shown("matrix"), parsePair(params.pair)), renderPair(),
        rangeKey(before) !== rangeKey(params) ? renderLinks() : null,
        rangeKey(before) !== rangeKey(params) ? jobs.render(window_(params)) : null]);
      if (before.gpu !== params.gpu) inventory.setRows(inventoryRows(data.detail, shown("health")));
      showTarget();
    },
    title: () => {
      const verdict = data.detail?.stale ? "unknown (stale)" : data.health?.verdict;
      return `${name}${verdict ? ` · ${verdict}` : ""}`;
    },
    destroy() {
      purge(el.topo, el.matrix, el.series, el.throughput, el.errors, el.infoErrors);
      jobs.destroy();
    },
  };
}
