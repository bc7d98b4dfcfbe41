// The page's first script (a classic one, loaded async: it imports nothing and runs as soon
// as it arrives, before the app's module graph has loaded). When the URL opens Placement,
// it adds the <script> for plotly.js at once (id "plotly-js", which plot.js adopts), so
// plotly.js downloads and compiles while the app's modules load and its chained API calls
// are answered. (A preload that ran plotly.js only after those calls measured slower: a
// preloaded script is compiled when it runs, not while it downloads.)
//
// The host page starts plotly.js itself, when it mounts, just after it has sent its API
// calls: run here, plotly.js's half second of compiling held up the module graph and so
// the calls (bench/dashboard.py's profile: the first API call left at 750 ms). Any other
// page (the fleet, alerts, a domain) draws no chart and never fetches plotly.js.

(function startPlotly() {
  if (window.Plotly) return;
  var src = document.querySelector('meta[name="peerwatch-plotly"]').content;
  if (!/^#\/?placement(\/|\?|$)/.test(location.hash)) return;
  var script = document.createElement("script");
  script.id = "plotly-js";
  script.src = src;
  script.addEventListener("load", function () { script.dataset.state = "loaded"; });
  script.addEventListener("error", function () { script.dataset.state = "failed"; });
  document.head.append(script);
})();
