"""The CSP holds in a real browser — every page (htmx included)
loads with no Content-Security-Policy violation and no JavaScript error."""

from __future__ import annotations

import re

import pytest

from tests.factories import make_done_trajectory, propose_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_pages_and_htmx_swaps_raise_no_csp_violation(page, live_server, login, owner, bank):
    violations: list[str] = []
    page.on("console", lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None)
    page.add_init_script(
        "document.addEventListener('securitypolicyviolation',"
        " e => console.error('Content Security Policy violation: ' + e.violatedDirective + ' ' + e.blockedURI))"
    )
    trajectory = make_done_trajectory(bank)
    item = propose_item(bank, trajectory)
    b = bank.public_id
    login(page, live_server, owner, f"/banks/{b}/")
    for path in (
        f"/banks/{b}/",
        f"/banks/{b}/review/",
        f"/banks/{b}/items/{item.public_id}/",  # loads its cited steps with htmx
        f"/banks/{b}/trajectories/{trajectory.public_id}/",
        f"/banks/{b}/impact/",
        f"/banks/{b}/settings/",
        f"/banks/{b}/tokens/",
        f"/teams/{bank.team.public_id}/",
    ):
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
    page.goto(f"{live_server.url}/banks/{b}/playground/")
    page.fill("textarea[name=q]", "opening hours")
    page.click("form[hx-get] button[type=submit]")
    page.wait_for_url(re.compile(r"[?&]q="))  # hx-push-url after the swap
    page.wait_for_load_state("networkidle")
    assert page.locator("head style").count() == 0  # htmx injected no <style>
    assert not violations, violations
