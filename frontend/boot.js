// The page's first script (a classic one, loaded async: it imports nothing and runs as soon
// as it arrives, before the app's module graph has loaded). When the URL opens a page with
// charts (a host, Placement), it adds the <script> for plotly.js at once (id "plotly-js",
// which plot.js adopts), so plotly.js downloads and compiles, streamed, while the app's
// modules load and its API calls are answered. Any other page gets a prefetch, at idle
// priority, for the host page the user may open next.
//
// (A preload that runs plotly.js only after Placement's chained API calls measured slower:
// a preloaded script is compiled when it runs, not while it downloads.)

(function startPlotly() {
  if (window.Plotly) return;
  var src = document.querySelector('meta[name="peerwatch-plotly"]').content;
  if (!/^#\/?(host|placement)(\/|\?|$)/.test(location.hash)) {
    var link = document.createElement("link");
    link.rel = "prefetch";
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
