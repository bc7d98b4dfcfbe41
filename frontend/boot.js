// The page's first script (a classic one, loaded async: it imports nothing and runs as soon
// as it arrives, before the app's module graph has loaded). When the URL opens a page with
// charts (a host, Placement), it adds the <script> for plotly.js at once (id "plotly-js",
// which plot.js adopts), so plotly.js downloads and compiles, streamed, while the app's
// modules load and its API calls are answered. Any other page (the fleet, alerts, a domain)
// draws no chart and never fetches plotly.js, not even as a prefetch.
//
// (A preload that runs plotly.js only after Placement's chained API calls measured slower:
// a preloaded script is compiled when it runs, not while it downloads.)

(function startPlotly() {
  if (window.Plotly) return;
  var src = document.querySelector('meta[name="peerwatch-plotly"]').content;
  if (!/^#\/?(host|placement)(\/|\?|$)/.test(location.hash)) return;
  var script = document.createElement("script");
  script.id = "plotly-js";
  script.src = src;
  script.addEventListener("load", function () { script.dataset.state = "loaded"; });
  script.addEventListener("error", function () { script.dataset.state = "failed"; });
  document.head.append(script);
})();
