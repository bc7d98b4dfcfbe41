// The page's first script (a classic one, loaded async: it imports nothing and runs as soon
// as it arrives, before the app's module graph has loaded). When the URL opens a page with
// charts, it starts fetching plotly.js at once, beside the app's modules and API calls:
// - a host page: the <script> itself (id "plotly-js", which plot.js picks up), so plotly.js
//   compiles and runs while the page's API calls, all sent together, are answered;
// - Placement: only a preload (fetched, not run), because its API calls form a chain (the
//   hosts that fit, then the placement) that running plotly.js would hold up; placement.js
//   runs it once the last call is sent;
// - any other page: a prefetch, at idle priority, for the host page the user may open next.

(function startPlotly() {
  var hash = location.hash;
  var src = document.querySelector('meta[name="peerwatch-plotly"]').content;
  var charts = /^#\/?(host|placement)(\/|\?|$)/.test(hash);
  if (window.Plotly) return;
  if (!charts || /^#\/?placement/.test(hash)) {
    var link = document.createElement("link");
    link.rel = charts ? "preload" : "prefetch"; // other pages: into the cache, when idle
    link.as = "script";
    link.href = src;
    document.head.append(link);
    return;
  }
  var script = document.createElement("script");
  script.id = "plotly-js";
  script.src = src;
  script.addEventListener("load", function () { script.dataset.state = "loaded"; });
  script.addEventListener("error", function () { script.dataset.state = "failed"; });
  document.head.append(script);
})();
