// The dashboard reads the public JSON API and nothing else: whatever it shows, a script or a
// scheduler can read from the same URLs (see /docs on the server).

const BASE = "/api/v1";

export class ApiError extends Error {
  constructor(status, detail, url) {
    super(`${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
    this.url = url;
  }
}

function detailOf(body, fallback) {
  if (!body || body.detail === undefined) return fallback;
  if (typeof body.detail === "string") return body.detail;
  if (body.detail.message) return body.detail.message; // e.g. the placement's 409
  // FastAPI validation errors: [{loc: [...], msg: "..."}]
  return body.detail.map((d) => `${(d.loc || []).slice(1).join(".")}: ${d.msg}`).join("; ");
}

/** The JSON body of `response`, or an ApiError naming what the server said was wrong. */
async function answerOf(response, url) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) throw new ApiError(response.status, detailOf(body, response.statusText), url);
  return body;
}

export async function getJSON(path, params = {}, { signal } = {}) {
  const query = new URLSearchParams(
    Object.entries(params).filter(([, v]) => v !== null && v !== undefined && v !== ""),
  ).toString();
  const url = `${BASE}${path}${query ? `?${query}` : ""}`;
  return answerOf(await fetch(url, { signal, headers: { Accept: "application/json" } }), url);
}

/** POST a JSON body with the admin token (in a header: never in the URL). */
export async function postJSON(path, body, token) {
  const url = `${BASE}${path}`;
  return answerOf(await fetch(url, { method: "POST", body: JSON.stringify(body),
    headers: { Accept: "application/json", "Content-Type": "application/json",
      Authorization: `Bearer ${token}` } }), url);
}

const host = (name) => `/hosts/${encodeURIComponent(name)}`;

export const api = {
  hosts: (opts) => getJSON("/hosts", {}, opts),
  host: (name, opts) => getJSON(host(name), {}, opts),
  health: (name, opts) => getJSON(`${host(name)}/health`, {}, opts),
  topology: (name, opts) => getJSON(`${host(name)}/topology`, {}, opts),
  matrix: (name, test, opts) => getJSON(`${host(name)}/matrix`, { test }, opts),
  series: (name, params, opts) => getJSON(`${host(name)}/series`, params, opts),
  linkSeries: (name, params, opts) => getJSON(`${host(name)}/links/series`, params, opts),
  alerts: (params, opts) => getJSON("/alerts", params, opts),
  alert: (id, opts) => getJSON(`/alerts/${encodeURIComponent(id)}`, {}, opts),
  ack: (id, body, token) => postJSON(`/alerts/${encodeURIComponent(id)}/ack`, body, token),
  silence: (body, token) => postJSON("/silences", body, token),
  maintenance: (params, opts) => getJSON("/maintenance", params, opts),
  schedulerHosts: (minHealthy, opts) => getJSON("/scheduler/hosts", { min_healthy_gpus: minHealthy }, opts),
  placement: (params, opts) => getJSON("/scheduler/placement", params, opts),
  snapshots: (name, opts) => getJSON(`${host(name)}/snapshots`, {}, opts),
  jobDiff: (name, job, opts) => getJSON(`${host(name)}/jobs/${encodeURIComponent(job)}/diff`, {}, opts),
};

export const TESTS = ["ce_write", "ce_read", "ce_bidir", "sm_write", "sm_read", "latency",
  "staged"];
