// peerwatch drain's marks: a small "taken out by peerwatch 03:12" tag on the fleet row and the
// host page, its reason in the title (see GET /api/v1/drain/marks, docs/drain.md).

import { api } from "../shared/api.js";
import { h } from "../shared/dom.js";
import * as fmt from "../shared/format.js";

/** Map host -> its marks (one per scheduler); null when the API did not answer. */
export async function drainMarks(host = null) {
  try {
    const { marks } = await api.drainMarks(host ? { host } : {});
    const out = new Map();
    for (const m of marks) out.set(m.host, [...(out.get(m.host) ?? []), m]);
    return out;
  } catch (error) {
    if (error.name === "AbortError") throw error;
    return null;
  }
}

export function drainTags(marks) {
  return (marks ?? []).map((m) => h("span", {
    class: `tag drain${m.applied ? "" : " observe"}`, title: `${m.text} (${m.scheduler})`,
  }, m.applied ? `taken out by peerwatch ${fmt.time(m.taken_out_at)}`
    : `would be taken out ${fmt.time(m.taken_out_at)} (observe)`));
}
