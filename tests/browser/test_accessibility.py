"""axe-core (from npm, see axe.py) in the real Chromium finds no critical and no serious
violation on any view, at a desk's width and a phone's: names, roles, and text contrast of
at least 4.5:1 (axe's color-contrast rule)."""

from __future__ import annotations

import pytest

from tests.browser.axe import violations
from tests.browser.conftest import FAULTY, STALE, Fleet, open_view
from tests.browser.test_domain_page import DOMAIN, wait_rack

pytestmark = pytest.mark.browser

VIEWS = [("/#/fleet", "fleet"), (f"/#/host/{FAULTY}?test=ce_write&pair=1-2", "host"),
         (f"/#/host/{STALE}", "host"), ("/#/alerts?state=all", "alerts"),
         ("/#/placement", "placement"), (f"/#/domain/{DOMAIN}", "domain"),
         (f"/#/compare?hosts=hgx8-01,{FAULTY}&test=ce_write&pair=0-1", "compare"),
         ("/#/network?host=mesh4-01", "network")]


def _report(found: list[dict]) -> str:
    return "\n".join(f"{v['impact']} {v['id']} x{v['count']}: {v['help']}\n" + "\n".join(
        f"    {n['target']}: {n['summary']}" for n in v["nodes"]) for v in found)


def _check_every_view(page) -> None:  # type: ignore[no-untyped-def]
    for path, view in VIEWS:
        open_view(page, path, view)
        page.wait_for_timeout(300)  # Plotly's own layout settles after the draw's promise
        found = violations(page)
        assert not found, f"{path}:\n{_report(found)}"


def test_no_critical_or_serious_violation_on_any_view(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_rack(fleet)
    _check_every_view(page)


def test_no_critical_or_serious_violation_on_a_phone(browser, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    wait_rack(fleet)
    context = browser.new_context(base_url=fleet.url, viewport={"width": 390, "height": 844})
    context.set_default_timeout(20_000)
    try:
        page = context.new_page()
        page.goto("/?refresh=86400#/fleet")
        _check_every_view(page)
    finally:
        context.close()
