// Numbers as an operator reads them: GB/s (decimal, like nvbandwidth), µs/ns, ages.

export function bandwidth(bps) {
  if (bps === null || bps === undefined) return "–";
  if (bps >= 1e12) return `${(bps / 1e12).toFixed(2)} TB/s`;
  if (bps >= 1e9) return `${(bps / 1e9).toFixed(1)} GB/s`;
  if (bps >= 1e6) return `${(bps / 1e6).toFixed(1)} MB/s`;
  return `${(bps / 1e3).toFixed(1)} kB/s`;
}

export function seconds(s) {
  if (s === null || s === undefined) return "–";
  if (s < 1e-6) return `${(s * 1e9).toFixed(0)} ns`;
  if (s < 1e-3) return `${(s * 1e6).toFixed(2)} µs`;
  if (s < 1) return `${(s * 1e3).toFixed(1)} ms`;
  return `${s.toFixed(1)} s`;
}

/** A value in the unit the API gave it ("B/s" or "s"). */
export function value(v, unit) {
  return unit === "s" ? seconds(v) : bandwidth(v);
}

/** The figure a chart axis plots: GB/s for bandwidth, µs for latency. */
export function axisValue(v, unit) {
  if (v === null || v === undefined) return null;
  return unit === "s" ? v * 1e6 : v / 1e9;
}

export function axisUnit(unit) {
  return unit === "s" ? "µs" : "GB/s";
}

export function ratio(r) {
  return r === null || r === undefined ? "–" : r.toFixed(2);
}

export function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function rate(perSecond) {
  if (perSecond === null || perSecond === undefined) return "–";
  return perSecond >= 100 ? perSecond.toFixed(0) : perSecond.toPrecision(2);
}

/** "42 s", "7 min", "3 h", "2 d" ago, from an ISO time. */
export function age(iso, now = Date.now()) {
  if (!iso) return "never";
  const s = Math.max(0, (now - Date.parse(iso)) / 1000);
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

export function ageSeconds(iso, now = Date.now()) {
  return iso ? Math.max(0, (now - Date.parse(iso)) / 1000) : Infinity;
}

export function time(iso) {
  if (!iso) return "–";
  return new Date(iso).toISOString().replace("T", " ").slice(0, 19) + "Z";
}

export function pair(src, dst) {
  return `GPU${src} → GPU${dst}`;
}

/** "since 2026-12-01 04:12:00Z (35 min)": when a verdict began (the server's `since`). */
export function since(iso) {
  return iso ? `since ${time(iso)} (${age(iso)})` : "";
}

/** "last good data 21:04 (3 min ago)": how old what a page shows is, kept beside any error. */
export function lastGood(at, now = Date.now()) {
  if (!at) return "no data loaded yet";
  const hhmm = new Date(at).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hour12: false });
  return `last good data ${hhmm} (${age(new Date(at).toISOString(), now)} ago)`;
}
