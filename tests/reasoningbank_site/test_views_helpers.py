"""What every HTML view shares: the template or named partial that answers
(htmx refreshing one region gets that region), how a POST answers (302, or an
htmx client redirect), the toast that swaps nothing in place, row links
reversed once per page, and POST-only action views."""

import uuid

import pytest
from django.http import HttpResponse
from django.test import RequestFactory
from django.urls import reverse
from django_htmx.middleware import HtmxDetails

from reasoningbank_site.views_helpers import (
    htmx_template,
    post_action,
    redirect_after_post,
    reverse_each,
    template_for,
    toast,
)


def _request(method: str = "get", **htmx_headers):
    request = getattr(RequestFactory(), method)("/", **htmx_headers)
    request.htmx = HtmxDetails(request)
    return request


HTMX = {"HTTP_HX_REQUEST": "true"}


def test_template_for_answers_the_partial_of_the_targeted_region_only():
    partials = {"item-list": "list"}
    assert template_for(_request(), "items.html", partials) == "items.html"
    assert template_for(_request(**HTMX, HTTP_HX_TARGET="item-list"), "items.html", partials) == "items.html#list"
    # htmx aiming at a region the page has no partial for gets the whole page
    assert template_for(_request(**HTMX, HTTP_HX_TARGET="elsewhere"), "items.html", partials) == "items.html"
    assert template_for(_request(**HTMX), "items.html", partials) == "items.html"


def test_htmx_template_is_the_partial_for_any_htmx_request():
    assert htmx_template(_request(), "form.html", "fields") == "form.html"
    assert htmx_template(_request(**HTMX), "form.html", "fields") == "form.html#fields"


def test_a_post_answers_a_302_or_an_htmx_client_redirect():
    plain = redirect_after_post(_request("post"), "/next/")
    assert (plain.status_code, plain["Location"]) == (302, "/next/")
    htmx = redirect_after_post(_request("post", **HTMX), "/next/")
    assert htmx.status_code == 200 and htmx["HX-Redirect"] == "/next/"


def test_a_toast_swaps_nothing_and_shows_the_message_escaped():
    response = toast(_request("post", **HTMX), "Saved <b>item</b>")
    assert response.status_code == 200 and response["HX-Reswap"] == "none"
    html = response.content.decode()
    assert "Saved &lt;b&gt;item&lt;/b&gt;" in html and "hx-swap-oob" in html


def test_reverse_each_gives_what_reverse_gives_for_every_row():
    bank_id = uuid.uuid4()
    link = reverse_each("memories:review_focus", "item_id", bank_id=bank_id)
    for item_id in (uuid.uuid4(), uuid.uuid4()):
        assert link(item_id) == reverse("memories:review_focus", kwargs={"bank_id": bank_id, "item_id": item_id})
    with pytest.raises(TypeError, match="item_id must be a UUID"):
        link("not-a-uuid")


def test_a_post_action_refuses_other_methods_and_is_marked():
    @post_action
    def act(request):
        return HttpResponse("done")

    assert act.post_action is True
    assert act(_request("post")).status_code == 200
    assert act(_request("get")).status_code == 405
