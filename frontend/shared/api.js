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

// How long an answer boot.js asked for before the modules loaded (a host page's first view)
// may stand in for asking: only for the page's first load, never for a later refresh.
const PREFETCH_KEEP_MS = 10000;

/** The answer boot.js already asked for at `url`, once (then forgotten), or null. */
function prefetched(url) {
  const found = window.peerwatchPrefetched?.[url];
  if (!found) return null;
  delete window.peerwatchPrefetched[url];
  return Date.now() - found.at <= PREFETCH_KEEP_MS ? found.answer : null;
}

export async function getJSON(path, params = {}, { signal, token } = {}) {
  const query = new URLSearchParams(
    Object.entries(params).filter(([, v]) => v !== null && v !== undefined && v !== ""),
  ).toString();
  const url = `${BASE}${path}${query ? `?${query}` : ""}`;
  const early = token || signal ? null : prefetched(url);
  if (early) {
    try {
      return await answerOf(await early, url);
    } catch (error) {
      if (error instanceof ApiError) throw error; // the server's answer, as asked
      // no answer then (the network, a server restart): ask again now
    }
  }
  const headers = { Accept: "application/json", ...(token ? { Authorization: `Bearer ${token}` } : {}) };
  return answerOf(await fetch(url, { signal, headers }), url);
}

/** POST a JSON body with the admin token (in a header: never in the URL). */
export async function postJSON(path, body, token) {
  const url = `${BASE}${path}`;
  return answerOf(await fetch(url, { method: "POST", body: JSON.stringify(body),
    headers: { Accept: "application/json", "Content-Type": "application/json",
      Authorization: `Bearer ${token}` } }), url);
}

/** DELETE with the admin token (expiring a silence). */
export async function deleteJSON(path, token) {
  const url = `${BASE}${path}`;
  return answerOf(await fetch(url, { method: "DELETE",
    headers: { Accept: "application/json", Authorization: `Bearer ${token}` } }), url);
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
  gpuSeries: (name, params, opts) => getJSON(`${host(name)}/gpus/series`, params, opts),
  alerts: (params, opts) => getJSON("/alerts", params, opts),
  alert: (id, opts) => getJSON(`/alerts/${encodeURIComponent(id)}`, {}, opts),
  ack: (id, body, token) => postJSON(`/alerts/${encodeURIComponent(id)}/ack`, body, token),
  silence: (body, token) => postJSON("/silences", body, token),
  silences: (expired, opts) => getJSON("/silences", { expired: expired ? "true" : null }, opts),
  expireSilence: (id, token) => deleteJSON(`/silences/${encodeURIComponent(id)}`, token),
  adminCheck: (token) => getJSON("/admin/check", {}, { token }),
  maintenance: (params, opts) => getJSON("/maintenance", params, opts),
  drainMarks: (params, opts) => getJSON("/drain/marks", params, opts),
  schedulerHosts: (minHealthy, opts) => getJSON("/scheduler/hosts", { min_healthy_gpus: minHealthy }, opts),
  placement: (params, opts) => getJSON("/scheduler/placement", params, opts),
  domains: (opts) => getJSON("/domains", {}, opts),
  domain: (id, opts) => getJSON(`/domains/${encodeURIComponent(id)}`, {}, opts),
  networkPairs: (test, opts, host = null) => getJSON("/network/pairs", { test, host }, opts),
  networkHosts: (opts) => getJSON("/network/hosts", {}, opts),
  fleetPeers: (params, opts) => getJSON("/fleet/peers", params, opts),
  snapshots: (name, opts) => getJSON(`${host(name)}/snapshots`, {}, opts),
  events: (name, params, opts) => getJSON(`${host(name)}/events`, params, opts),
  job: (id, opts) => getJSON(`/jobs/${encodeURIComponent(id)}`, {}, opts),
  jobDiff: (name, job, opts) => getJSON(`${host(name)}/jobs/${encodeURIComponent(job)}/diff`, {}, opts),
};

/** The server's test catalogue (GET /api/v1/tests), which index.html carries in a meta tag:
 * [{name, scope: "pair" | "gpu" | "set", unit, about, label}]. No test name is kept here. */
export const TEST_CATALOG = JSON.parse(
  document.querySelector('meta[name="peerwatch-tests"]')?.content || "[]");
const named = (scope) => TEST_CATALOG.filter((t) => t.scope === scope).map((t) => t.name);
/** Tests of one ordered pair (the matrix and the pair series). */
export const TESTS = named("pair");
/** Tests of one GPU on its own (host copies and the local copy). */
export const GPU_TESTS = named("gpu");
/** What each test measures, for hovers. */
export const TEST_ABOUT = Object.fromEntries(TEST_CATALOG.map((t) => [t.name, t.about]));
/** Each test's short column title (its name where the catalogue gives no other). */
export const TEST_LABEL = Object.fromEntries(TEST_CATALOG.map((t) => [t.name, t.label || t.name]));
/** A test's unit: "s" (latency, lower is better) or "B/s". */
export const unitOf = (name) => TEST_CATALOG.find((t) => t.name === name)?.unit ?? "B/s";
