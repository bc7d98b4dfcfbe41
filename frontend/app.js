// The shell: routes the hash to a view, refreshes the open view every REFRESH_MS while the tab
// is visible, and marks <main data-ready="view"> once a view has drawn (tests and the
// benchmark wait for that attribute, and for data-drawn="<the hash it drew>").
//
// A view module exports `mount(root, route) -> {update(route), refresh(), destroy()}`:
// `update` is called when only the page's params change (a new pair, another test), so charts
// keep their zoom; `refresh` re-reads the API; both return promises.

import { h, replace } from "./shared/dom.js";
import * as fmt from "./shared/format.js";
import { parse } from "./shared/router.js";
import * as fleet from "./views/fleet.js";
import * as host from "./views/host.js";
import * as alerts from "./views/alerts.js";
import * as placement from "./views/placement.js";
import * as domain from "./views/domain.js";
import * as job from "./views/job.js";
import * as compare from "./views/compare.js";
import * as network from "./views/network.js";

const VIEWS = { fleet, host, alerts, placement, domain, job, compare, network };
// Seconds between refreshes: 15, or `?refresh=N` in the page URL (N >= 1), e.g. for a wall screen.
const REFRESH_MS = Math.max(1, Number(new URLSearchParams(location.search).get("refresh")) || 15) * 1000;

const main = document.getElementById("view");
const status = document.getElementById("refresh-status");
const errorBox = h("p", { class: "error-box", role: "alert", id: "view-error" });
let current = null; // {name, key, view}

function routeKey(route) {
  return `${route.view}/${route.args.join("/")}`;
}

function markNav(name) {
  for (const link of document.querySelectorAll("nav.top a[data-view]")) {
    if (link.dataset.view === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

/** Run a view's loads one after another, so an older answer never lands after a newer one. */
function serial(entry, work) {
  const run = entry.queue.then(work, work);
  entry.queue = run.catch(() => {});
  return run;
}

let lastGood = null; // when a view last drew from a full answer of the server
const lastGoodWords = () => fmt.lastGood(lastGood);

/** The page's title: `<what it shows> · peerwatch`, from the view when it can say more;
 * `trouble` ("not found") when the view could not load (issue 40: #/host/nope kept the
 * previous host's title). */
function setTitle(entry, trouble = null) {
  const said = entry.view.title?.();
  const what = said || entry.name[0].toUpperCase() + entry.name.slice(1);
  document.title = `${what}${trouble ? ` · ${trouble}` : ""} · peerwatch`;
}

/** After a new view's first draw, the keyboard and a screen reader start at its heading. */
function focusHeading() {
  const heading = main.querySelector("h1");
  if (!heading) return;
  heading.tabIndex = -1;
  heading.focus({ preventScroll: true });
}

/** Wait for a view's work; then mark <main> with the view and the route it has drawn. */
async function settle(promise, entry, hash = location.hash, { fresh = false } = {}) {
  try {
    await promise;
    if (current !== entry) return; // the user moved on meanwhile
    // when the view first drew (a User Timing mark: the browser tests and the benchmark read
    // it, as a script polling the page cannot while the page's thread draws on)
    if (!main.dataset.ready) performance.mark(`peerwatch:drawn:${entry.name}`);
    main.dataset.ready = entry.name;
    main.dataset.drawn = hash;
    main.dataset.updates = String(Number(main.dataset.updates || 0) + 1);
    delete main.dataset.error;
    errorBox.remove();
    lastGood = Date.now();
    status.textContent = `updated ${new Date(lastGood).toLocaleTimeString()}`;
    status.classList.remove("error");
    setTitle(entry);
    if (fresh) focusHeading();
  } catch (error) {
    if (error.name === "AbortError" || current !== entry) return;
    main.dataset.error = error.message;
    const away = !error.status; // no answer at all: the server (or the network) is away
    const why = away ? "the server did not answer" : error.detail || error.message;
    if (!main.dataset.ready) setTitle(entry, away ? "server away" : error.status === 404 ? "not found" : "error");
    errorBox.textContent = `Could not load this page: ${why}` +
      (main.dataset.ready ? ` — showing what was loaded before; ${lastGoodWords()}` : "");
    main.prepend(errorBox);
    status.replaceChildren(h("span", { class: "status-error" }, `update failed: ${why}`), " · ",
      h("span", { class: "last-good", id: "last-good" }, lastGoodWords()));
    status.classList.add("error");
  }
}

function navigate() {
  const route = parse();
  const hash = location.hash;
  const name = VIEWS[route.view] ? route.view : "fleet";
  markNav(name);
  if (current && current.key === routeKey(route)) {
    const entry = current;
    settle(serial(entry, () => entry.view.update(route)), entry, hash);
    return;
  }
  // Moving to another view moves the focus to its heading; the page's first view leaves it
  // where a new page has it, so the first Tab still reaches the skip link.
  const moved = current !== null;
  if (current) current.view.destroy();
  delete main.dataset.ready;
  delete main.dataset.drawn;
  main.dataset.view = name;
  const root = h("div", { class: `page page-${name}` });
  replace(main, root);
  const view = VIEWS[name].mount(root, route);
  current = { name, key: routeKey(route), view, queue: Promise.resolve() };
  settle(serial(current, () => view.refresh()), current, hash, { fresh: moved });
}

let refreshing = false;

async function tick() {
  if (!current || refreshing || document.visibilityState !== "visible") return;
  refreshing = true;
  try {
    const entry = current;
    await settle(serial(entry, () => entry.view.refresh()), entry);
  } finally {
    refreshing = false;
  }
}

// The skip link jumps past the header to the page's main thing: the first row of a table
// marked data-skip-target (the fleet's hosts), else <main>. A hash href would be a route.
const skip = document.getElementById("skip-link");
const skipTarget = () => main.querySelector("[data-skip-target]");
skip.addEventListener("focus", () => {
  skip.textContent = `Skip to ${skipTarget()?.dataset.skipTarget || "content"}`;
});
skip.addEventListener("click", (event) => {
  event.preventDefault();
  const target = skipTarget();
  (target?.querySelector("tbody tr[tabindex]") || target || main).focus();
});

window.addEventListener("hashchange", navigate);
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") tick();
});
setInterval(tick, REFRESH_MS);
navigate();
