// The page's first script, a classic one that imports nothing. It is not async: it has run
// before the app's modules (which wait for the page to be parsed) ask for anything, and it
// comes from the browser's cache (build-named), so it holds the parser up for no round trip.
// When the URL opens Placement or a host, it adds the <script> for plotly.js at once (id
// "plotly-js", which plot.js adopts), so plotly.js downloads and compiles while the app's
// modules load and its API calls are answered. (A preload that ran plotly.js only after
// those calls measured slower: a preloaded script is compiled when it runs, not while it
// downloads.)
//
// A host page also sends its first-view API calls from here (`prefetchHost`): plotly.js's
// half second or more of running (most of a cold host page's time, bench/dashboard.py's
// profile) then overlaps the server answering them and the module graph loading, where
// before the calls waited for the modules (~400 ms) and plotly.js for the calls. plotly.js's
// <script> is added first and at high priority (`fetchPriority`): a script added by a script
// is fetched at low priority, and Chromium held it behind the nine API calls, so plotly.js
// came out of the browser's own cache only as their answers did, and all its running came
// after (bench/dashboard.py, load 20-28 on 2 CPUs: in hand at 1.2-2.1 s before, ~0.6 s now).
// shared/api.js takes each prefetched answer once, for the same URL, within
// PREFETCH_KEEP_MS; a URL it does not find (another minute's window) is asked as usual.
// Any other page (the fleet, alerts, a domain) draws no chart and never fetches plotly.js.

var HOST_ROUTE = /^#\/?host\/([^/?]+)(?:\?(.*))?$/;
var RANGES_S = { "1h": 3600, "6h": 21600, "24h": 86400, "7d": 604800, "30d": 2592000 };

/** The window the host page asks for (charts/timeline.js `windowOf`, relative ranges). */
function hostWindow(params) {
  if (params.get("from") || params.get("to")) return null; // absolute: asked by the page
  var until = Math.ceil(Date.now() / 60000) * 60000;
  var span = (RANGES_S[params.get("range")] || RANGES_S["6h"]) * 1000;
  return { since: new Date(until - span).toISOString(), until: new Date(until).toISOString() };
}

function query(pairs) {
  return "?" + new URLSearchParams(pairs).toString();
}

/** The URLs views/host.js's first load asks (loadAll), in its own spelling. */
function hostUrls(name, params) {
  var catalog = JSON.parse(document.querySelector('meta[name="peerwatch-tests"]').content || "[]");
  var tests = catalog.filter(function (t) { return t.scope === "pair"; }).map(function (t) { return t.name; });
  var test = tests.indexOf(params.get("test")) >= 0 ? params.get("test") : tests[0];
  var base = "/api/v1/hosts/" + encodeURIComponent(name);
  var urls = [base, base + "/health", base + "/topology", base + "/matrix" + query([["test", test]]),
    "/api/v1/alerts" + query([["host", name]]), "/api/v1/maintenance" + query([["host", name]]),
    "/api/v1/drain/marks" + query([["host", name]])];
  var w = hostWindow(params);
  if (w) urls.push(base + "/events" + query([["since", w.since], ["until", w.until]]));
  var pair = /^(\d+)-(\d+)$/.exec(params.get("pair") || "");
  if (w && pair) {
    urls.push(base + "/series" + query([["src", pair[1]], ["dst", pair[2]], ["test", test],
      ["since", w.since], ["until", w.until]]));
  }
  return urls;
}

(function startPlotly() {
  if (window.Plotly) return;
  var src = document.querySelector('meta[name="peerwatch-plotly"]').content;
  if (!/^#\/?(placement|host\/)/.test(location.hash)) return;
  var script = document.createElement("script");
  script.id = "plotly-js";
  script.src = src;
  script.fetchPriority = "high"; // not queued behind the API calls (above)
  script.addEventListener("load", function () { script.dataset.state = "loaded"; });
  script.addEventListener("error", function () { script.dataset.state = "failed"; });
  document.head.append(script);
})();

(function prefetchHost() {
  var m = HOST_ROUTE.exec(location.hash);
  if (!m || !window.fetch) return;
  var name;
  try {
    name = decodeURIComponent(m[1]);
  } catch (e) {
    return; // a malformed name: the page says so itself
  }
  var at = Date.now();
  var found = {};
  hostUrls(name, new URLSearchParams(m[2] || "")).forEach(function (url) {
    var answer = fetch(url, { headers: { Accept: "application/json" } });
    answer.catch(function () {}); // an unused failure is no unhandled rejection
    found[url] = { at: at, answer: answer };
  });
  window.peerwatchPrefetched = found;
})();
