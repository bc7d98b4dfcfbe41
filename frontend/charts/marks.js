// Where the host page's event marks come from (issue 21). Each source turns what the page has
// loaded into events [{at, end?, kind, label}], drawn on every time chart by timeline.js's
// eventMarks. A source may load data of its own: `load(host, window)` runs with the page's
// slow-changing reads (every 4th refresh, and when the range changes); its answer is what
// `events` gets as its second argument. Fabric events (Xid/SXid) are one more entry here:
//   { kind: "fabric", colour: OKABE_ITO.orange, load: (host, w) => api.events(host, w),
//     events: (page, loaded) => ... }

/** Link down/up from each port's stored state changes (health `links[].changes`); the
 * host's NVLinkDown/NVLinkFlapping alerts only for ports without such a history (a server
 * from before it was kept), so one change is never marked twice. */
export function linkEvents(health, alerts) {
  const events = [];
  const known = new Set();
  const together = new Map(); // "<at>|<gpu>|<state>" -> links: one mark for ports that changed at once
  for (const l of health?.links || []) {
    if (!l.changes?.length) continue;
    known.add(`${l.gpu}/${l.link}`);
    for (const c of l.changes) {
      const key = `${c.at}|${l.gpu}|${c.state}`;
      if (!together.has(key)) together.set(key, { at: c.at, gpu: l.gpu, state: c.state, links: [] });
      together.get(key).links.push(l.link);
    }
  }
  for (const g of together.values()) {
    const what = g.links.length > 1 ? `links ${g.links.join(", ")}` : `link ${g.links[0]}`;
    events.push({ at: g.at, kind: "link", label: `GPU${g.gpu} ${what} ${g.state}` });
  }
  for (const a of alerts || []) {
    if (a.alertname !== "NVLinkDown" && a.alertname !== "NVLinkFlapping") continue;
    if (known.has(`${a.labels?.gpu}/${a.labels?.link}`)) continue;
    const what = `GPU${a.labels?.gpu} link ${a.labels?.link}`;
    const start = a.fired_at || a.active_since;
    if (start) events.push({ at: start, kind: "link", label: `${what} down` });
    if (a.resolved_at) events.push({ at: a.resolved_at, kind: "link", label: `${what} up` });
  }
  return events;
}

/** The host's maintenance window, shaded over its span. */
export function maintenanceEvents(windows) {
  return (windows || []).map((m) => ({ at: m.starts_at, end: m.ends_at, kind: "maintenance",
    label: `maintenance: ${m.comment || ""}` }));
}

/**
 * Every source of marks. `events(page, loaded)`: `page` is the host page's loaded data
 * ({health, alerts, maintenance, jobEvents}); `loaded` is this source's own `load` answer.
 */
export const MARK_SOURCES = [
  { kind: "link", events: (page) => linkEvents(page.health, page.alerts) },
  { kind: "maintenance", events: (page) => maintenanceEvents(page.maintenance ? [page.maintenance] : []) },
  { kind: "job", events: (page) => page.jobEvents || [] },
];

/** The sources that load data of their own, for the page to load with its slow reads. */
export const loadingSources = () => MARK_SOURCES.filter((s) => s.load);

/** All sources' events for the page; `loaded` maps a source's kind to its `load` answer. */
export function hostEvents(page, loaded = {}) {
  return MARK_SOURCES.flatMap((s) => s.events(page, loaded[s.kind] ?? null) || []);
}

/** A source's mark colour, where it names one (timeline.js has the built-in kinds'). */
export const sourceColour = (kind) => MARK_SOURCES.find((s) => s.kind === kind)?.colour;
