"""Styled 404 / 403 / 500 pages with DEBUG off (500.html renders
with no context processor and no database), the API's 404 stays JSON, and
the favicon answers at /favicon.ico."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.test import Client, RequestFactory
from django.urls import reverse
from django.views.defaults import server_error

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def production(settings):
    settings.DEBUG = False


def test_unknown_page_is_the_styled_404(client, owner):
    client.force_login(owner)
    response = client.get("/banks/00000000-0000-0000-0000-000000000000/")
    html = response.content.decode()
    assert response.status_code == 404
    assert "This page does not exist" in html and 'class="panel errorpage"' in html
    assert 'rel="icon"' in html and "css/app.css" in html
    assert "/banks/00000000-0000-0000-0000-000000000000/" in html  # which address it was


def test_a_hostile_path_is_escaped_on_the_404(client):
    html = client.get('/nope/"><script>alert(1)</script>').content.decode()
    assert "<script>alert(1)" not in html


def test_a_role_too_low_is_the_styled_403_saying_why(client, viewer, bank):
    client.force_login(viewer)
    response = client.get(reverse("memories:item_create", kwargs={"bank_id": bank.public_id}))
    html = response.content.decode()
    assert response.status_code == 403
    assert "Your role does not allow this" in html and "This needs the reviewer role; you are viewer." in html


@pytest.mark.urls("tests.reasoningbank_site.error_urls")
def test_a_view_that_raises_is_the_styled_500():
    response = Client(raise_request_exception=False).get("/boom/")
    html = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on our side" in html and 'class="panel errorpage"' in html
    assert "a bug in a view" not in html  # no internals


def test_the_500_page_needs_no_database_or_context(django_assert_max_num_queries):
    request = RequestFactory().get("/anything/")  # no user, no session: as when a middleware failed
    with django_assert_max_num_queries(0):
        response = server_error(request)
    assert response.status_code == 500 and "Something went wrong" in response.content.decode()


@pytest.mark.parametrize("path", ["/api/v1/nope", "/api/v1/nope/deeper?x=1", "/api/nope"])
def test_api_404_stays_json(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "not_found"


def test_favicon_answers(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/favicon.svg"
    path = finders.find("favicon.svg")
    assert path and Path(path).read_text(encoding="utf-8").startswith("<svg")


def test_an_expired_form_is_the_styled_403(owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    response = client.post(reverse("accounts:team_create"), {"name": "No token"})
    assert response.status_code == 403
    assert "This form has expired" in response.content.decode()
