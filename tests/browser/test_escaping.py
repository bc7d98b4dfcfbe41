"""Strings from reports are text, never markup: hosts named like HTML render as their names.

The `page` fixture fails the test if a payload ran (a dialog, `window.__pwned`, a console
error); here we also check the names are on the page, verbatim, and no element was injected.
"""

from __future__ import annotations

import time

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


def test_a_stored_html_host_name_opens_as_a_refusal(page, fleet: Fleet, browser_context) -> None:  # type: ignore[no-untyped-def]
    """A name stored before the host-name rule (the fleet seeds it past the API) can't be
    opened as a host any more: every path parameter goes through the rule, so its
    page shows the server's 422 as text, and nothing in the name runs."""
    _, watch = browser_context
    open_view(page, "/#/fleet", "fleet")
    page.get_by_role("link", name=XSS_IMG, exact=True).click()
    error = page.locator("#view-error")
    error.wait_for(state="visible")
    assert "breaks the rule" in error.inner_text()
    assert page.evaluate(NO_INJECTED) == 0
    open_view(page, "/#/fleet", "fleet")  # leave the page before it asks again
    # Chromium logs each refused fetch as a console error: these 422s are the answer expected
    deadline = time.monotonic() + 10
    while not any("status of 422" in p for p in watch.problems) and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    watch.problems[:] = [p for p in watch.problems if "status of 422" not in p]
