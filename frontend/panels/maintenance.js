// Maintenance windows: a small "maintenance until …" tag on the fleet row and the host page.
// Inside a window the host's alerts are still shown but not paged (see /api/v1/maintenance).

import { api } from "../shared/api.js";
import { h } from "../shared/dom.js";
import * as fmt from "../shared/format.js";

/** Map host -> its active window ending last; null when the API did not answer. */
export async function activeMaintenance(host = null) {
  try {
    const { windows } = await api.maintenance(host ? { host } : {});
    const out = new Map();
    for (const w of windows.filter((x) => x.active)) {
      const seen = out.get(w.host);
      if (!seen || seen.ends_at < w.ends_at) out.set(w.host, w);
    }
    return out;
  } catch (error) {
    if (error.name === "AbortError") throw error;
    return null;
  }
}

export function maintenanceTag(window) {
  if (!window) return null;
  const why = window.comment ? `: ${window.comment}` : "";
  return h("span", { class: "tag maintenance", title: `declared by ${window.created_by}${why}; ` +
    "alerts are shown, not paged" }, `maintenance until ${fmt.time(window.ends_at)}`);
}
