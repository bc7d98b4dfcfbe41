// Host: one machine's fabric. Topology graph and bandwidth matrix side by side, the selected
// pair's history under them, then link counters and the GPU inventory. The URL holds the test,
// the pair and the time range (#/host/<name>?test=ce_write&pair=3-5&range=24h).

import { api, TESTS, unitOf } from "../shared/api.js";
import { activatable, h, replace } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { gpuTestsTable } from "../panels/gpu_tests.js";
import { inventoryRows, inventoryTable } from "../panels/inventory.js";
import { jobsPanel } from "../panels/jobs.js";
import { nicsPanel } from "../panels/nics.js";
import { eventsPanel } from "../panels/host_events.js";
import { downLinks, errorFigure, throughputFigure } from "../charts/links.js";
import { matrixChart, matrixLegend } from "../charts/matrix.js";
import { activeMaintenance, maintenanceTag } from "../panels/maintenance.js";
import { drainMarks, drainTags } from "../panels/drain.js";
import { badge, verdictOf } from "../shared/palette.js";
import { draw, onPlotly, plotly, purge } from "../charts/plot.js";
import { href, updateParams } from "../shared/router.js";
import { hostAlertPeriods, pairProblems } from "../panels/host_problems.js";
import { seriesFigure } from "../charts/series.js";
import { gpuSeriesFigure } from "../charts/gpu_series.js";
import { jobLinks } from "./job.js";
import { DEFAULT_TEST, hostNetworkLine } from "./network.js";
import { linkNotices, scrollToTarget } from "../panels/host_links.js";
import { hostFaults, moreWords, topFault } from "../shared/faults.js";
import { clockTag, hostBadge, maintenanceBadge, severityTag, worstFiring } from "../shared/severity.js";
import { staleHealth, staleMatrix, staleTopology } from "../shared/stale.js";
import { topologyFigure } from "../charts/topology.js";
import { CROSSHAIR, csvButton, eventMarks, hideOverprinted, linkCrosshair, linkZoom, rangeBar,
  rangeNotices, windowOf, zoomOf } from "../charts/timeline.js";
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
  let gone = false; // destroyed: the user moved on, a late first stage asks nothing more
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
    gpusNote: h("div"),
    gpus: h("div", { class: "chart", id: "gpu-series-chart", role: "figure",
      "aria-label": "Per GPU: SM clock, power and temperature over time" }),
    gpusHead: h("div", { class: "panel-head" }),
    network: h("div", { class: "network-box" }),
  };
  const pairPanel = h("section", { class: "panel", id: "pair-panel", hidden: true },
    el.pairHead, el.pairNote, el.series, el.pairFacts);
  const inventory = inventoryTable(() => selectedGpu());
  const matrix = matrixChart(el.matrix, el.live, (src, dst) => pickPair(src, dst));
  const jobs = jobsPanel(name);
  const xids = eventsPanel(name); // Xid/SXid events: a list and marks on the time charts
  const nics = nicsPanel(); // RDMA NIC ports: verdict, state, rate, counters (docs/network.md)

  replace(root, el.head, el.notices, el.healthNote, el.problems,
    h("div", { class: "two-col" },
      h("section", { class: "panel", id: "topology-panel" }, h("div", { class: "panel-head" }, h("h2", {}, "Topology"),
        h("span", { class: "muted" }, "NVLink solid (width = NV#) · PCIe dotted (path level)")), el.topoNote,
      el.topo, el.topoList),
      h("section", { class: "panel", id: "matrix-panel" }, h("div", { class: "panel-head" },
        h("h2", {}, "Bandwidth matrix"), el.testPick, matrixLegend()), el.matrixNote, el.matrix, el.live,
        el.gpuTests)),
    el.rangeBar, pairPanel,
    h("section", { class: "panel", id: "gpu-series-panel" }, el.gpusHead, el.gpusNote, el.gpus),
    h("section", { class: "panel" }, el.linksHead, el.linksNote,
      h("div", { class: "two-col" }, el.throughput, el.errors), el.infoErrors),
    xids.el, jobs.el,
    h("section", { class: "panel table-wrap" }, h("div", { class: "panel-head" }, h("h2", {}, "Inventory")),
      inventory.el),
    nics.el, el.probeErrors);

  const test = () => (TESTS.includes(params.test) ? params.test : TESTS[0]);
  const hasGpu = (g) => !data.detail || data.detail.gpus.some((x) => x.index === g);
  /** The URL's pair when this host has both GPUs (before its record loads: as written); a
   * pair it lacks is a notice (linkNotices) and selects nothing: no phantom cell. */
  const selectedPair = () => {
    const pair = parsePair(params.pair);
    return pair && pair.every(hasGpu) ? pair : null;
  };
  /** The URL's GPU when this host has it (the inventory's outlined row), else null. */
  const selectedGpu = () => (params.gpu !== undefined && params.gpu !== "" && hasGpu(Number(params.gpu))
    ? String(params.gpu) : null);
  const rangeKey = (p) => `${p.range}|${p.from}|${p.to}`;

  const timeCharts = () => [el.series, el.gpus, el.throughput, el.errors, el.infoErrors, jobs.chart];
  const zoomed = new WeakSet(); // charts the URL's zoom was applied to

  /** The URL's zoom (`zoom=from~to`), once on each time chart drawn: as a relayout, which
   * the chart then keeps through refreshes as if the user had dragged it (uirevision). */
  function zoomFromUrl() {
    const zoom = zoomOf(params);
    if (!zoom || !window.Plotly) return;
    for (const c of timeCharts().filter((x) => x.data && !zoomed.has(x))) {
      zoomed.add(c);
      window.Plotly.relayout(c, { "xaxis.range": zoom });
    }
  }

  /** A user's zoom (or its reset) into the URL; the charts drawn already show it. */
  function keepZoom(range) {
    for (const c of timeCharts()) if (c.data) zoomed.add(c);
    const utc = (t) => new Date(String(t).replace(" ", "T") + (/Z$/.test(t) ? "" : "Z")).toISOString();
    updateParams({ zoom: range ? range.map(utc).join("~") : "" });
  }

  /** One zoom and one crosshair across the time charts drawn so far. */
  function linkTimeCharts() {
    zoomFromUrl();
    linkZoom(timeCharts, keepZoom);
    linkCrosshair(timeCharts);
  }

  /** Each mark source's own data (marks.js), by its kind; a failed one marks nothing. */
  async function loadMarks() {
    const loaded = await Promise.all(loadingSources().map(async (s) =>
      [s.kind, await part(`marks-${s.kind}`, () => s.load(name, window_(params)))]));
    return Object.fromEntries(loaded);
  }

  /** A time figure with the host's events marked on it and a crosshair. */
  function marked(fig, since, until, el = null) {
    const events = hostEvents({ health: data.health, alerts: data.alerts, maintenance: data.maintenance,
      jobEvents: [...jobs.events(), ...xids.events()] }, data.marks || {});
    const marks = eventMarks(events, since, until, el?.clientWidth || 600);
    const layout = { ...fig.layout, shapes: [...(fig.layout.shapes || []), ...marks.shapes],
      annotations: [...(fig.layout.annotations || []), ...marks.labels],
      xaxis: { ...fig.layout.xaxis, ...CROSSHAIR },
      margin: { ...fig.layout.margin, t: Math.max(fig.layout.margin?.t ?? 28, marks.top) } };
    return { data: fig.data, layout };
  }

  /** A marked figure drawn, then any label that still overprints another hidden: now, and
   * whenever Plotly draws it again at another size (a resized window, a rotated phone). */
  async function drawMarked(chart, fig) {
    await draw(chart, fig.data, fig.layout);
    onPlotly(chart, "plotly_afterplot", () => { hideOverprinted(chart); });
    await hideOverprinted(chart);
  }

  /** The jobs chart, in the page's window and linked with the other time charts. */
  async function renderJobs() {
    await jobs.render(window_(params));
    linkTimeCharts();
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
      hl ? hostBadge(hl.verdict, hl.reason, d.stale, d.clock_note) : null,
      d.stale ? h("span", { class: "tag stale" }, `◌ stale: last known at ${fmt.time(d.last_report_at)}`)
        : clockTag(d.clock_note),
      severityTag(worstFiring(data.alerts)), maintenanceBadge(data.maintenance),
      maintenanceTag(data.maintenance),
      ...drainTags(data.drain),
      alertChip(), domainLink(),
      clockLine(d),
      hl ? topLine(hl) : null,
      hl ? reasonLine(hl) : null,
      h("p", { class: "meta" }, [
        `fabric ${d.fabric}`, `driver ${d.driver_version ?? "–"}`, `CUDA ${d.cuda_version ?? "–"}`,
        `probe ${d.probe_version ?? "–"}`, `last report ${fmt.age(d.last_report_at)} ago`,
        // IMEX where the host has it, beside the measured bandwidth (never trusted alone)
        d.imex?.present ? `IMEX ${d.imex.state ?? "?"}` : null,
        sweep ? sweepWords(sweep) : "no sweep yet",
      ].filter((t) => t !== null).map((t) => h("span", {}, t))), el.network);
    renderNetwork();
    replace(el.testPick, select("Test", TESTS, test(), (t) => updateParams({ test: t })));
    replace(el.rangeBar, rangeBar(params, (changes) => updateParams({ ...changes, zoom: "" })));
  }

  /** Its network verdict from the host pairs (views/network.js), under the header: drawn
   * into its own box, so its late load leaves the heading (and the focus on it) alone. */
  function renderNetwork() {
    replace(el.network, hostNetworkLine(name, data.network, Boolean(data.detail?.stale)));
  }

  /** "Not trusted yet: probe clock 3 min behind …", said once: not while the ProbeClockSkew
   * alert (pending from the first report) is the top fault saying it. */
  function clockLine(d) {
    if (!d.clock_note || d.stale) return null;
    const said = (data.alerts || []).some((a) => a.alertname === "ProbeClockSkew"
      && (a.state === "pending" || a.state === "firing"));
    return said ? null : h("p", { class: "top-line clock-note", id: "clock-note" },
      h("b", {}, "Not trusted yet: "), d.clock_note);
  }

  /** The last sweep in an operator's words (issue 40: "11.82 s GPU, 0.2 s wall" puzzled):
   * when, how long the host was under test, and how much GPU time its tests used. */
  function sweepWords(sweep) {
    const wall = sweep.wall_time_s < 10 ? sweep.wall_time_s.toFixed(1) : sweep.wall_time_s.toFixed(0);
    return `last bandwidth sweep ${fmt.age(sweep.finished_at)} ago: it took ${wall} s; ` +
      `its tests kept the GPUs busy ${sweep.gpu_time_s.toFixed(1)} s in all (each GPU's time added up) ` +
      `and used at most ${fmt.bytes(sweep.device_memory_bytes_max)} of GPU memory`;
  }

  let reasonOpen = false; // the folded reason, kept open across refreshes once opened

  /** The verdict's whole reason: said once. A healthy host's is one short line; a host at
   * fault has its top fault above and its problems below, so the long reason (figures,
   * catalog references) sits behind a fold. */
  function reasonLine(hl) {
    if (hl.verdict === "healthy") return h("p", { class: "reason-line" }, hl.reason);
    const since = hl.since ? ` — ${hl.verdict} ${fmt.since(hl.since)}` : "";
    const fold = h("details", { class: "reason-line", open: reasonOpen || null },
      h("summary", {}, `The whole verdict reason${since}`), h("p", {}, hl.reason));
    fold.addEventListener("toggle", () => { reasonOpen = fold.open; });
    return fold;
  }

  /** A tray's way up to its rack: "NVLink domain fcbd9a15… · degraded". */
  function domainLink() {
    const d = data.domain;
    if (!d) return null;
    return h("a", { class: `chip domain-link v-${d.verdict}`, href: href("domain", [d.id]) },
      `NVLink domain ${d.id.slice(0, 8)}… · ${d.verdict}`);
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
      top.more ? h("span", { class: "muted" }, `${moreWords(top)} (below)`) : null);
  }

  /** A problem's reason, short: what is wrong up to the catalog's action and references,
   * which fold behind "what to do" (issue 40: a 5-line paragraph repeated per pair). */
  function shortReason(reason) {
    const cut = String(reason).search(/; action: | \[/);
    if (cut < 0) return [reason];
    return [reason.slice(0, cut), " ", h("details", { class: "more-reason" },
      h("summary", {}, "what to do"), reason.slice(cut).replace(/^; /, ""))];
  }

  /** Pairs whose reasons say the same (host_problems.js `groupPairs`): the words once, the
   * pairs named, each one's figures behind a fold. */
  function groupedReason(p) {
    return [p.reason, " ", h("span", { class: "muted pairs-named" }, `(${p.pairs.join(", ")})`), " ",
      h("details", { class: "more-reason" }, h("summary", {}, "figures"),
        h("ul", {}, p.details.map((d) => h("li", {}, d))))];
  }

  function problemItem(p) {
    const li = h("li", { class: `v-${p.verdict}`, "data-what": p.what, "data-gpu": p.gpu ?? null,
      "data-links": p.links ? p.links.join(",") : null },
      h("span", { class: "glyph" }, verdictOf(p.verdict).glyph), " ", h("b", {}, p.what), " ",
      ...(p.details ? groupedReason(p) : shortReason(p.reason)),
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
    const pair = selectedPair();
    pairPanel.hidden = !pair || !data.series;
    if (pairPanel.hidden) return;
    const s = data.series;
    const periods = hostAlertPeriods(data.health, data.alerts, s);
    const swap = h("a", { class: "btn", href: "#", on: { click: (e) => {
      e.preventDefault(); pickPair(pair[1], pair[0]);
    } } }, `⇄ GPU${pair[1]} → GPU${pair[0]}`);
    replace(el.pairHead, h("h2", {}, `${fmt.pair(pair[0], pair[1])} · ${s.test}`), swap,
      h("span", { class: "muted" }, `${s.source} · step ${s.step_s} s`),
      csvButton(el.series, () => `${name}-GPU${pair[0]}-GPU${pair[1]}-${s.test}`, "pair history"));
    const cell = shown("matrix")?.cells.find((c) => c.src === pair[0] && c.dst === pair[1]);
    replace(el.pairFacts, cell ? [badge(cell.verdict, cell.reason), " ", cell.reason] : "",
      ...jobLinks(s.jobs));
    await drawMarked(el.series, marked(seriesFigure(s, periods), s.since, s.until, el.series));
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
      csvButton(el.throughput, () => `${name}-nvlink-throughput`, "throughput"),
      csvButton(el.errors, () => `${name}-link-errors`, "errors"),
      csvButton(el.infoErrors, () => `${name}-corrected-errors`, "corrected errors"));
    const t = marked(throughputFigure(ls), ls.since, ls.until, el.throughput);
    const e = marked(errorFigure(ls), ls.since, ls.until, el.errors);
    const i = marked(errorFigure(ls, true), ls.since, ls.until, el.infoErrors);
    await Promise.all([drawMarked(el.throughput, t), drawMarked(el.errors, e),
      drawMarked(el.infoErrors, i), renderGpus()]);
    linkTimeCharts();
  }

  /** The GPUs' clock, power and temperature beside the bandwidth (item 6 of issue 40). */
  async function renderGpus() {
    const g = data.gpus;
    if (!g) return;
    replace(el.gpusHead, h("h2", {}, "GPU clocks · power · temperature"),
      h("span", { class: "muted" }, "sampled around each sweep; dotted: power limit, slowdown temperature"),
      csvButton(el.gpus, () => `${name}-gpu-clocks-power-temperature`, "clocks, power, temperature"));
    await drawMarked(el.gpus, marked(gpuSeriesFigure(g), g.since, g.until, el.gpus));
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
    const pair = selectedPair();
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
    const lines = [...linkNotices(params, data.detail, parsePair(params.pair), data.seriesError, TESTS),
      ...rangeNotices(params)];
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
   * app/api/conditional_get.py); the link counters only when a new report came or the
   * window moved; what changes slowly (resolved alerts, maintenance windows, job snapshots,
   * Xid/SXid events) only every SLOW_EVERY-th refresh (issue 40: an open page made 30
   * requests a minute, all answered in full).
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
      first ? null : loadBelow(full, false, known),
      full ? part("events", () => xids.load(window_(params))) : null,
    ]);
    Object.assign(data, { detail, health, topology, matrix: mx, alerts, series,
      maintenanceMap: maintenance, maintenance: maintenance?.get(name) ?? null,
      drainMap: drain, drain: drain?.get(name) ?? null });
    loadedAt = { changed: detail.changed_at, stale: detail.stale, series: seriesKey() };
    renderPanelNotes();
  }

  /** The NVLink domain (GB200 NVL72 rack) this tray belongs to, for the link in the header;
   * null for a host whose GPUs report no fabric cluster, or when the domains do not answer. */
  async function loadDomain() {
    if (!data.detail?.gpus.some((g) => g.switch_fabric?.cluster_uuid)) return null;
    try {
      return (await api.domains()).domains.find((d) => d.hosts.includes(name)) ?? null;
    } catch (error) {
      if (error.name === "AbortError") throw error;
      return null;
    }
  }

  /** The network's judged host pairs (GET /network/pairs), for this host's network line;
   * null when they do not answer (the page goes on without the line). */
  async function loadNetwork() {
    try {
      return DEFAULT_TEST ? await api.networkPairs(DEFAULT_TEST, {}, name) : null;
    } catch (error) {
      if (error.name === "AbortError") throw error;
      return null;
    }
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
  async function loadBelow(full, alerts, known = null) {
    if (gone) return;
    const key = `${known?.last_report_at}|${JSON.stringify(window_(params))}`;
    const sameLinks = known && key === linksKey && data.links && !failed.links;
    const [links, gpus, , marks, all, domain, network] = await Promise.all([
      sameLinks ? data.links : part("links", () => api.linkSeries(name, window_(params))),
      sameLinks ? data.gpus : part("gpus", () => api.gpuSeries(name, window_(params))),
      full ? part("jobs", () => jobs.load()) : null,
      full ? loadMarks() : data.marks,
      alerts ? hostAlerts(true) : null,
      full ? loadDomain() : data.domain,
      full ? loadNetwork() : data.network,
    ]);
    Object.assign(data, { links, gpus, marks, domain, network });
    if (known) linksKey = key; // the report and window these counters are of
    if (all) data.alerts = all;
  }

  let linksKey = null;

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
    replace(el.gpusNote, panelNote("gpus", "GPU clocks"));
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
        if (data.domain) renderHead(); // the tray's link to its domain
        renderNetwork();
        await Promise.all([renderPair(), renderLinks(), renderJobs()]);
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
    nics.update(data.detail.nics);
    replace(el.gpuTests, gpuTestsTable(shown("health")));
    renderProbeErrors();
    const topology = shown("topology");
    const topo = topology ? topologyFigure(topology) : null;
    replace(el.topoList, topology ? topologyList(topology) : null);
    await Promise.all([
      topo ? draw(el.topo, topo.data, topo.layout) : null,
      data.matrix ? matrix.set(shown("matrix"), selectedPair()) : null,
      xids.render(), renderPair(), lower ? renderLinks() : null, lower ? renderJobs() : null,
    ]);
  }

  let targeted = null; // the pair/GPU/link last scrolled to, so a refresh never scrolls again

  function showTarget() {
    const key = `${params.pair}|${params.gpu}|${params.link}`;
    if (key === targeted) return;
    targeted = key;
    scrollToTarget(root, params, selectedPair() && data.series ? el.series : null);
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
      const { zoom: _was, ...rest } = before;
      const { zoom: _now, ...restNow } = params;
      if (data.detail && JSON.stringify(rest) === JSON.stringify(restNow)) {
        renderNotices(); // only the zoom moved: the charts already show it
        return;
      }
      if (!data.detail) { // the first load failed (e.g. the server was away): load it all now
        await this.refresh();
        return;
      }
      if (before.test !== params.test) data.matrix = await loadMatrix();
      if (rangeKey(before) !== rangeKey(params)) {
        [data.links, data.marks, data.gpus] = await Promise.all([api.linkSeries(name, window_(params)),
          loadMarks(), api.gpuSeries(name, window_(params)), xids.load(window_(params))]);
        xids.render();
      }
      await loadPair();
      renderHead();
      renderNotices();
      await Promise.all([matrix.set(shown("matrix"), selectedPair()), renderPair(),
        rangeKey(before) !== rangeKey(params) ? renderLinks() : null,
        rangeKey(before) !== rangeKey(params) ? renderJobs() : null]);
      if (before.gpu !== params.gpu) inventory.setRows(inventoryRows(data.detail, shown("health")));
      showTarget();
    },
    title: () => {
      const verdict = data.detail?.stale ? "unknown (stale)"
        : data.detail?.clock_note ? "unknown (clock off)" : data.health?.verdict;
      return `${name}${verdict ? ` · ${verdict}` : ""}`;
    },
    destroy() {
      gone = true;
      purge(el.topo, el.matrix, el.series, el.throughput, el.errors, el.infoErrors, el.gpus);
      jobs.destroy();
    },
  };
}
