"""Secrets shown once, in a real headless Chromium: a new token's secret and
its curl examples, the printed-only invitation link and a new webhook's
signing secret each have the same ``data-copy`` button, which puts the value
on the clipboard and says "Copied", and a reload of the page shows the value
no more (the pages are reached by post/redirect/get, so the reload creates
nothing twice)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from accounts.models import ApiToken, Invitation, WebhookSubscription
from tests.ui.conftest import signed_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _signed_in(browser, live_server, user, width, height):
    return signed_in(browser, live_server, user, width, height, permissions=["clipboard-read", "clipboard-write"])


def _copy(page, source_id: str) -> str:
    """Click the copy button of ``source_id`` and answer what the clipboard then holds."""
    button = page.locator(f'button[data-copy="{source_id}"]')
    button.click()
    page.wait_for_function("(b) => b.textContent === 'Copied'", arg=button.element_handle())
    return page.evaluate("navigator.clipboard.readText()")


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1366, 768)])
def test_the_printed_only_invitation_link_copies_and_is_gone_after_a_reload(
    browser, live_server, owner, team, settings, width, height
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    context, page = _signed_in(browser, live_server, owner, width, height)
    try:
        team_page = reverse("accounts:team", kwargs={"team_id": team.public_id})
        page.goto(f"{live_server.url}{team_page}")
        page.fill("#invite input[name=email]", "newcomer@example.com")
        page.click("#invite button[type=submit]")
        page.wait_for_url(re.compile(re.escape(team_page) + r"$"))
        link = page.locator("#invitation-link").inner_text()
        assert re.search(r"/invitations/\S+$", link) and Invitation.objects.filter(email="newcomer@example.com")
        assert page.locator("ul.messages").filter(has_text=link).count() == 0
        assert _copy(page, "invitation-link") == link
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # the long link wraps
        page.reload()
        assert page.locator("#invitation-link").count() == 0 and link not in page.content()
    finally:
        context.close()


def test_a_new_webhooks_secret_copies_and_a_reload_adds_nothing(browser, live_server, owner, bank, settings):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True
    context, page = _signed_in(browser, live_server, owner, 1366, 768)
    try:
        page.goto(f"{live_server.url}{reverse('accounts:bank_webhooks', kwargs={'bank_id': bank.public_id})}")
        page.fill("#add-webhook input[name=url]", "http://127.0.0.1:9/hooks")
        page.locator("#add-webhook input[name=events]").first.check()
        page.click("#add-webhook button[type=submit]")
        webhook = WebhookSubscription.objects.get()
        detail = reverse("accounts:webhook_detail", kwargs={"bank_id": bank.public_id, "webhook_id": webhook.public_id})
        page.wait_for_url(re.compile(re.escape(detail) + r"$"))
        secret = page.locator("#webhook-secret").inner_text()
        assert secret.startswith("whsec_") and _copy(page, "webhook-secret") == secret
        page.reload()
        assert page.url.endswith(detail) and page.locator("#webhook-secret").count() == 0
        assert secret not in page.content() and WebhookSubscription.objects.count() == 1
    finally:
        context.close()


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1366, 768)])
def test_a_review_only_tokens_page_offers_its_own_example_and_a_reload_creates_nothing(
    browser, live_server, owner, bank, width, height
):
    context, page = _signed_in(browser, live_server, owner, width, height)
    try:
        tokens = reverse("accounts:bank_tokens", kwargs={"bank_id": bank.public_id})
        page.goto(f"{live_server.url}{tokens}")
        page.fill("#create-token input[name=name]", "review script")
        page.locator("#create-token input[name=scopes]").evaluate_all(
            "(boxes) => boxes.forEach((b) => (b.checked = b.value === 'review'))"
        )
        page.click("#create-token button[type=submit]")
        page.wait_for_url(re.compile(re.escape(tokens) + r"$"))
        assert page.locator("#no-agent-scope").is_visible()
        assert page.locator("#curl-retrieve, #curl-trajectory").count() == 0
        secret = page.locator("#token-secret").inner_text()
        curl = page.locator("#curl-review").inner_text()
        assert f"Bearer {secret}" in curl and _copy(page, "curl-review") == curl.strip()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.reload()
        assert page.locator("#token-secret").count() == 0 and secret not in page.content()
        assert ApiToken.objects.filter(bank=bank, name="review script").count() == 1
    finally:
        context.close()
