"""The screenshots in docs/img/, taken from a running `peerwatch demo` (not a test).

    peerwatch demo --port 8101 --hosts 8 --backfill-hours 6 &   # wait ~6 min: faults develop,
    python -m tests.browser.docs_shots http://127.0.0.1:8101 docs/img   # pcie4-01 turns stale
    python -m tests.browser.docs_shots http://127.0.0.1:8101 docs/img "" domain   # only these

Pages: the fleet, the HGX board that lost two NVLinks (hgx8-01), the host that stopped
reporting (pcie4-01), the host whose probe clock runs 3 min behind (mesh4-02: not trusted),
the alerts page, the demo's NVL72 rack (its NVLink domain page), the network between hosts
(its bad cable found) and
job 81240's page (its snapshots' diff, events, alerts and verdicts in one timeline);
each full-page at 1440 px, plus the alerts, fleet and host pages at a phone's width, and
hgx8-01's time charts with the mouse on one (the crosshair on all, the event marks).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from peerwatch.probes.sim.presets import rack_cluster_uuid
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, DRAWN

SHOTS = {
    "fleet": ("#/fleet", "fleet"),
    "faulty-board": ("#/host/hgx8-01?test=ce_write", "host"),
    "stale-host": ("#/host/pcie4-01", "host"),
    "alerts": ("#/alerts?state=all", "alerts"),
    "domain": (f"#/domain/{rack_cluster_uuid('nvl72-a')}", "domain"),
    "job-page": ("#/job/81240", "job"),
    "clock-skew": ("#/host/mesh4-02", "host"),
    "network": ("#/network", "network"),
}


PHONE = ("alerts", "fleet", "faulty-board", "job-page")  # also taken at a phone's width


def wait_drawn(page, view: str, hash_: str, timeout_s: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(DRAWN, [view, hash_]):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{hash_} did not draw")
        page.wait_for_timeout(100)


def take(url: str, out: Path, prefix: str = "", only: tuple[str, ...] = ()) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    taken = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for width, height, suffix in ((1440, 1000, ""), (390, 844, "-phone")):
            context = browser.new_context(viewport={"width": width, "height": height})
            page = context.new_page()
            for name, (hash_, view) in SHOTS.items():
                if (suffix and name not in PHONE) or (only and name not in only):
                    continue
                page.goto(f"{url}/?refresh=86400{hash_}")
                wait_drawn(page, view, hash_)
                page.wait_for_timeout(500)
                page.mouse.move(1, 1)
                path = out / f"{prefix}{name}{suffix}.png"
                page.screenshot(path=str(path), full_page=True)
                taken.append(path)
            if not suffix and (not only or "host-charts" in only):
                taken.append(charts_shot(page, url, out / f"{prefix}host-charts.png"))
            context.close()
        browser.close()
    return taken


CHARTS = "#/host/hgx8-01?test=ce_write&pair=1-2&range=6h"
# a measured point about 60 % across the pair history (the hover needs a point under it)
PLOT_MIDDLE = """id => { const el = document.getElementById(id), xa = el._fullLayout.xaxis;
  const ya = el._fullLayout.yaxis, box = el.getBoundingClientRect();
  const t = el.data.find(d => d.name.startsWith('measured'));
  const [lo, hi] = xa.range.map(v => xa.d2l(v)), goal = lo + 0.6 * (hi - lo);
  const ats = t.x.map(x => xa.d2l(x));
  const i = ats.reduce((b, a, j) => Math.abs(a - goal) < Math.abs(ats[b] - goal) ? j : b, 0);
  const at = ats[i];
  return {x: box.left + xa._offset + xa.l2p(at), y: box.top + ya._offset + ya.l2p(t.y[i])}; }"""


def charts_shot(page, url: str, path: Path) -> Path:  # type: ignore[no-untyped-def]
    """The host's time charts with the mouse on the pair history: one crosshair on all of
    them, the event marks (link down/up, maintenance, jobs) above each."""
    page.goto(f"{url}/?refresh=86400{CHARTS}")
    wait_drawn(page, "host", CHARTS)
    page.locator("#range-bar").scroll_into_view_if_needed()
    page.evaluate("() => window.scrollBy(0, document.getElementById('range-bar')"
                  ".getBoundingClientRect().top - 8)")
    at = page.evaluate(PLOT_MIDDLE, "series-chart")
    page.mouse.move(at["x"] - 20, at["y"])
    page.mouse.move(at["x"], at["y"], steps=3)
    page.wait_for_timeout(400)
    page.screenshot(path=str(path))
    return path


if __name__ == "__main__":
    prefix = sys.argv[3] if len(sys.argv) > 3 else ""
    for shot in take(sys.argv[1], Path(sys.argv[2]), prefix, tuple(sys.argv[4:])):
        print(shot)
