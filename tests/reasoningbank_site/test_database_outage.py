"""A database outage answers 503 with Retry-After, never 500:
the live server is pointed at a port where nothing listens, so every new
connection is really refused; pointed back, it recovers without a restart."""

import contextlib
import socket

import pytest
import requests
from django.db import connections

from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # free again once closed: nothing listens there


@contextlib.contextmanager
def database_refusing():
    """New connections go to a closed port, and the live server's open ones
    (kept between requests: CONN_MAX_AGE) are dropped, as an outage drops them."""
    settings_dict = connections["default"].settings_dict  # shared by every thread's connection
    saved = {key: settings_dict[key] for key in ("HOST", "PORT")}
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
    settings_dict.update(HOST="127.0.0.1", PORT=str(_closed_port()))
    try:
        yield
    finally:
        settings_dict.update(saved)


def test_the_api_answers_503_json_with_retry_after(live_server, bank):
    token = factories.make_token(bank)
    url = f"{live_server.url}/api/v1/trajectories"
    body = {"task": "Find the opening hours", "steps": [{"thought": "look it up"}]}
    headers = {"Authorization": f"Bearer {token}"}
    with database_refusing():
        refused = requests.post(url, json=body, headers=headers, timeout=30)
    assert refused.status_code == 503, refused.text
    assert refused.headers["Retry-After"] == "5"
    assert refused.json() == {"detail": "The database is unavailable; retry shortly.", "code": "database_unavailable"}
    # The database is back: the same request is accepted, no restart.
    assert requests.post(url, json=body, headers=headers, timeout=30).status_code in (200, 201, 202)


def test_the_ui_answers_a_plain_503_page(live_server, client, owner, bank):
    client.force_login(owner)
    session = requests.Session()
    session.cookies.set("sessionid", client.cookies["sessionid"].value)
    pages = [f"{live_server.url}/", f"{live_server.url}/banks/{bank.public_id}/items/"]
    assert [session.get(url, timeout=30, allow_redirects=False).status_code for url in pages] == [200, 200]
    with database_refusing():
        down = [session.get(url, timeout=30, allow_redirects=False) for url in pages]
    for response in down:
        assert response.status_code == 503, response.text[:500]
        assert response.headers["Retry-After"] == "5"
        assert "cannot reach its database" in response.text
    assert [session.get(url, timeout=30, allow_redirects=False).status_code for url in pages] == [200, 200]
