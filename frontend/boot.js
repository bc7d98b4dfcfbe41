// The first script of the page, with no imports of its own so it runs before the app's module
// graph has loaded: a URL that opens a page with charts (a host, Placement) starts fetching
// and compiling plotly.js now, beside the app's modules and its API calls. plot.js is the one
// module instance app.js will import too, so the load is shared, never repeated.

if (/^#\/?(host|placement)(\/|\?|$)/.test(location.hash)) {
  import("./plot.js").then((m) => m.plotly()).catch(() => {}); // a failure shows when a chart draws
}
