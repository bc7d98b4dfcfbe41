// The hash router: every page state is a bookmarkable URL.
//
//   #/fleet?q=node&sort=ratio          -> {view: "fleet", args: [], params: {q, sort}}
//   #/host/<name>?test=ce_write&pair=3-5 -> {view: "host", args: [name], params: {...}}
//   #/alerts   #/placement?host=..&k=4&pattern=ring   #/domain/<cluster uuid>
//
// Path segments are percent-encoded, so a host name may hold any character (even "/").

export function parse(hash = location.hash) {
  const raw = hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?", 2);
  const segments = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = Object.fromEntries(new URLSearchParams(query));
  return { view: segments[0] || "fleet", args: segments.slice(1), params };
}

export function href(view, args = [], params = {}) {
  const path = [view, ...args].map(encodeURIComponent).join("/");
  const kept = Object.entries(params).filter(([, v]) => v !== null && v !== undefined && v !== "");
  const query = new URLSearchParams(kept).toString();
  return `#/${path}${query ? `?${query}` : ""}`;
}

export function hostHref(host, params = {}) {
  return href("host", [host], params);
}

/** Change some params of the current page without adding a history entry per keystroke. */
export function updateParams(changes, { push = false } = {}) {
  const { view, args, params } = parse();
  const next = href(view, args, { ...params, ...changes });
  if (next === location.hash) return;
  if (push) {
    location.hash = next; // fires hashchange itself
    return;
  }
  history.replaceState(null, "", next);
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}
