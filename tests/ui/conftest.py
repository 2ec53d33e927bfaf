"""What the browser tests (test_browser.py, test_browser_csp.py) share besides
tests/conftest.py: the headless Chromium (``browser``, one per module), a
fresh ``page`` per test that fails on JavaScript errors and leaves a
screenshot in test-artifacts/ when its test failed (the report hook below
tells it), and the ``login`` helper that signs in through the login page.
The builders they share with the view tests are in tests/factories.py."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.conftest import skip_unless

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PASSWORD = "pw-for-tests-only"  # tests.factories.make_user's default


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Lets the page fixture see whether the test failed (for its screenshot).
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="module")
def browser():
    skip_unless(os.path.exists(CHROMIUM), f"{CHROMIUM} is missing (apt-get install chromium)")
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # the sync API runs an event loop in this thread
    from playwright.sync_api import sync_playwright

    from memories.embedding.model import embed_texts

    embed_texts(["warm up"])  # load the model now, not inside the first approve under a UI timeout

    pw = sync_playwright().start()
    chromium = pw.chromium.launch(
        executable_path=CHROMIUM,
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
        ],
    )
    yield chromium
    chromium.close()
    pw.stop()


def open_page(browser):
    """A new browser context (its own session) and page: ``(context, page, errors)``, where ``errors``
    collects the page's JavaScript errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return context, page, errors


@pytest.fixture
def page(browser, request):
    context, page, errors = open_page(browser)
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def _login(page, live_server, user, next_url: str):
    page.goto(f"{live_server.url}/accounts/login/?next={next_url}")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_url(re.compile(re.escape(next_url) + r"$"))


def signed_in(browser, live_server, user, width=1366, height=768, **options):
    """A new context at ``width``×``height`` (``options``: more of Playwright's context options, e.g.
    ``timezone_id`` or ``permissions``) and its page, with ``user`` signed in through the login page."""
    context = browser.new_context(viewport={"width": width, "height": height}, **options)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_load_state()
    return context, page


@pytest.fixture
def login():
    """``login(page, live_server, user, next_url)``: sign ``user`` in through
    the login page (password ``PASSWORD``) and wait until ``next_url`` is shown."""
    return _login
