// Per-link charts from GET /hosts/{host}/links/series: NVLink throughput (TX per GPU, summed
// over its links, with each link's share in the hover) and error-counter rates (every link and
// counter that rose at all in the range, worst first; PCIe replays per GPU). Lifetime counters
// are judged by their rate, so the charts plot rates, never raw counts.

import { esc } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { baseLayout, SERIES } from "../shared/palette.js";
import { emptyNote, windowTrace } from "./plot.js";

// Judged (app/analysis/fabric_health.py): replay and recovery growth, CRC flit errors.
// Informational: CRC data and ECC data count errors the link corrected; they grow under load
// on healthy NVLink 4 hardware and are never judged, so they get a chart of their own.
export const JUDGED_KINDS = ["replay", "recovery", "crc_flit"];
export const INFO_KINDS = ["crc_data", "ecc_data"];
const MAX_ERROR_TRACES = 12;
// Below the date axis's two-line labels ("04:00 / Dec 1, 2026"), not over them.
const LEGEND_BELOW_DATES = { orientation: "h", y: -0.32, font: { size: 10 } };

function byGpu(links) {
  const groups = new Map();
  for (const l of links) {
    if (!groups.has(l.gpu)) groups.set(l.gpu, []);
    groups.get(l.gpu).push(l);
  }
  return [...groups.entries()].sort((a, b) => a[0] - b[0]);
}

const RATE_UNITS = [[1e9, "GB/s"], [1e6, "MB/s"], [1e3, "kB/s"], [1, "B/s"]];

/** TX bytes/s per GPU: the sum over its links at each bucket start, in one readable unit. */
export function throughputTraces(series) {
  const sums = byGpu(series.links).map(([gpu, links]) => [gpu, links, txSums(links)]);
  const peak = Math.max(0, ...sums.flatMap(([, , m]) => [...m.values()]));
  const [scale, unit] = RATE_UNITS.find(([s]) => peak >= s) || RATE_UNITS[0];
  const traces = sums.map(([gpu, links, m], i) => {
    const x = [...m.keys()].sort();
    return { type: "scatter", mode: "lines", name: `GPU${gpu} TX`, x, y: x.map((t) => m.get(t) / scale),
      line: { color: SERIES[i % SERIES.length], width: 1.5 },
      hovertemplate: `GPU${gpu} TX %{y:.3g} ${unit} over ${links.length} links<extra></extra>` };
  });
  return { traces, unit, peak };
}

function txSums(links) {
  const sums = new Map();
  for (const l of links) {
    for (const p of l.points) {
      if (p.tx_bps === null || p.tx_bps === undefined) continue;
      sums.set(p.start, (sums.get(p.start) || 0) + p.tx_bps);
    }
  }
  return sums;
}

/** One trace per (link, counter of `kinds`) that rose in the range, worst peak first, at most
 * 12; PCIe replays (judged) only with the judged kinds. */
export function errorTraces(series, kinds = JUDGED_KINDS) {
  const found = [];
  for (const l of series.links) {
    for (const kind of kinds) {
      const ys = l.points.map((p) => p[`${kind}_per_s`]);
      const peak = Math.max(0, ...ys.filter((v) => v !== null && v !== undefined));
      if (peak > 0) found.push({ name: `GPU${l.gpu} link ${l.link} ${kind}`, x: l.points.map((p) => p.start), y: ys, peak });
    }
  }
  for (const p of kinds === JUDGED_KINDS ? series.pcie || [] : []) {
    const ys = p.points.map((q) => q.replay_per_s);
    const peak = Math.max(0, ...ys.filter((v) => v !== null && v !== undefined));
    if (peak > 0) found.push({ name: `GPU${p.gpu} PCIe replay`, x: p.points.map((q) => q.start), y: ys, peak });
  }
  found.sort((a, b) => b.peak - a.peak);
  const traces = found.slice(0, MAX_ERROR_TRACES).map((f, i) => ({
    type: "scatter", mode: "lines+markers", name: esc(f.name), x: f.x, y: f.y,
    line: { color: SERIES[i % SERIES.length], width: 1.5 }, marker: { size: 4 },
    hovertemplate: `${esc(f.name)}: %{y:.3g}/s<extra></extra>`,
  }));
  return { traces, total: found.length };
}

export function throughputFigure(series) {
  const { traces, unit, peak } = throughputTraces(series);
  const note = !traces.length ? "no NVLink counters in this range"
    : peak === 0 ? "no NVLink traffic in this range" : null;
  const layout = baseLayout({
    height: 260, hovermode: "x unified",
    title: { text: "NVLink throughput (TX per GPU, all its links)", x: 0, font: { size: 12 } },
    legend: LEGEND_BELOW_DATES,
    xaxis: { type: "date" },
    yaxis: { title: { text: unit }, rangemode: "tozero" },
    annotations: note ? [emptyNote(note)] : [],
  });
  return { data: [windowTrace(series.since, series.until), ...traces], layout };
}

/** Judged counters (`informational` false) or corrected-error counters (true). */
export function errorFigure(series, informational = false) {
  const { traces, total } = errorTraces(series, informational ? INFO_KINDS : JUDGED_KINDS);
  const more = total > traces.length ? ` (worst ${traces.length} of ${total})` : "";
  const title = informational ? "Corrected errors (CRC data, ECC data), per second: informational, not judged"
    : "Judged link errors (replay, recovery, CRC flit), per second";
  const layout = baseLayout({
    height: informational ? 220 : 260, hovermode: "x unified",
    title: { text: `${title}${more}`, x: 0, font: { size: 12 } },
    legend: LEGEND_BELOW_DATES,
    xaxis: { type: "date" },
    yaxis: { title: { text: "errors/s" }, rangemode: "tozero" },
    annotations: traces.length ? [] : [emptyNote(informational ? "no corrected errors counted in this range"
      : "no judged error counter rose in this range ✓")],
  });
  return { data: [windowTrace(series.since, series.until), ...traces], layout };
}

/** Text summary for the links panel: which ports are down right now. */
export function downLinks(nvlinks) {
  return nvlinks.filter((l) => l.state !== "up").map((l) => `GPU${l.gpu} link ${l.link}`);
}

export const RANGE_NOTE = (series) => `${fmt.time(series.since)} – ${fmt.time(series.until)}, step ${series.step_s} s`;
