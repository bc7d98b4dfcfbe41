// Xid/SXid events rolled up (issue 40): a recurring event (one Xid every 30 s) is one row per
// (object, event) with its count and first and last time seen, not one row per occurrence.
// The host page's list, the job page's timeline and the chart bands all read these rows.

/** Where an event happened, in words: "GPU4 link 3", "GPU2", "NVSwitch 1". */
export function where(e) {
  if (e.object === "switch" || e.kind === "sxid") return `NVSwitch ${e.switch ?? "?"}`;
  return e.link !== null && e.link !== undefined ? `GPU${e.gpu} link ${e.link}` : `GPU${e.gpu ?? "?"}`;
}

const keyOf = (e) => `${e.kind}|${e.code}|${e.subcode ?? ""}|${where(e)}`;

/** Events (any order) -> [{...newest event, count, first, last}], newest `last` first. The
 * count adds each event's own count (a report may fold repeats into one row already). */
export function rollUp(events) {
  const rows = new Map();
  for (const e of events) {
    const key = keyOf(e);
    const n = e.count > 0 ? e.count : 1;
    const row = rows.get(key);
    if (!row) {
      rows.set(key, { ...e, count: n, first: e.at, last: e.at });
      continue;
    }
    row.count += n;
    if (e.at < row.first) row.first = e.at;
    if (e.at > row.last) Object.assign(row, { ...e, count: row.count, first: row.first, last: e.at });
  }
  return [...rows.values()].sort((a, b) => (a.last < b.last ? 1 : a.last > b.last ? -1 : 0));
}
