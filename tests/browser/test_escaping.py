"""Strings from reports are text, never markup: hosts named like HTML render as their names.

The `page` fixture fails the test if a payload ran (a dialog, `window.__pwned`, a console
error); here we also check the names are on the page, verbatim, and no element was injected.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import (
    XSS_IMG,
    XSS_SCRIPT,
    Fleet,
    open_view,
    screenshot,
    wait_hash,
)

pytestmark = pytest.mark.browser

NO_INJECTED = "() => document.querySelectorAll('img[src=x], #view script').length"


def test_html_host_names_render_as_text_on_the_fleet_page(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    names = {h["host"] for h in fleet.api("/hosts")["hosts"]}
    assert {XSS_SCRIPT, XSS_IMG} <= names  # the server kept them verbatim
    open_view(page, "/#/fleet", "fleet")
    for name in (XSS_SCRIPT, XSS_IMG):
        assert page.get_by_role("link", name=name, exact=True).count() == 1
    labels = page.locator(".heat-grid .cell").evaluate_all("cs => cs.map(c => c.title)")
    assert any(label.startswith(XSS_IMG) for label in labels)
    assert page.evaluate(NO_INJECTED) == 0
    page.fill("input.filter", "onerror")
    wait_hash(page, "q=onerror")
    screenshot(page, "escaping")


def test_html_host_name_renders_as_text_on_its_host_page(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, "/#/fleet", "fleet")
    page.get_by_role("link", name=XSS_IMG, exact=True).click()
    page.wait_for_selector('main[data-ready="host"]')
    assert page.locator("h1 .host").inner_text() == XSS_IMG
    assert XSS_IMG in page.locator(".reason-line").inner_text()
    assert page.evaluate(NO_INJECTED) == 0
    # the title names the host as text (document.title never parses markup)
    assert page.title().startswith(f"{XSS_IMG} · ") and page.title().endswith(" · peerwatch")
