"""Releases against a live server: a canary at 50 % over 400 retrievals
serves both releases in the right proportion, and a rollback changes what is
served at once."""

from __future__ import annotations

import json
import math
import urllib.request

import pytest

from memories.releases.models import PublishMode
from memories.releases.publishing import release_mode_set, release_publish
from memories.review.decisions import memory_item_approve
from memories.serving.models import RetrievalEvent
from tests import factories
from tests.factories import make_done_trajectory, propose_item
from tests.memories.lessons import DATES, LOGIN

RETRIEVALS = 400
SHARE = 0.5
# 4.5 binomial standard deviations: a false failure about once in 150 000 runs.
TOLERANCE = 4.5 * math.sqrt(SHARE * (1 - SHARE) / RETRIEVALS)  # ±0.1125 of the share


def _post(url: str, token: str, body: dict) -> dict:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


@pytest.mark.django_db(transaction=True)
def test_a_50_percent_canary_is_served_in_proportion_and_a_rollback_takes_effect_at_once(live_server, owner):
    bank = factories.make_bank(min_similarity=-1.0)
    token = factories.make_token(bank, scopes=("retrieve", "review"))
    trajectory = make_done_trajectory(bank)
    login = propose_item(bank, trajectory, **LOGIN)
    memory_item_approve(item=login, author=owner, confirm_duplicate=True)  # release 1, production
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    dates = propose_item(bank, trajectory, **DATES)
    memory_item_approve(item=dates, author=owner, confirm_duplicate=True)
    release_publish(bank=bank, actor=owner, note="dates", canary_fraction=SHARE)  # release 2, canary

    retrieve = f"{live_server.url}/api/v1/retrieve"
    served = {1: 0, 2: 0}
    for n in range(RETRIEVALS):
        answer = _post(retrieve, token, {"query": f"sign in to see my orders ({n})", "k": 5})
        titles = {m["title"] for m in answer["items"]}
        # Each answer is its release, whole: release 1 holds the login lesson, release 2 both.
        assert titles == ({LOGIN["title"]} if answer["release"] == 1 else {LOGIN["title"], DATES["title"]})
        served[answer["release"]] += 1
    assert abs(served[2] / RETRIEVALS - SHARE) <= TOLERANCE, served
    by_release = {number: RetrievalEvent.objects.filter(bank=bank, release=number).count() for number in (1, 2)}
    assert by_release == served  # each retrieval's log row records the release it served

    # Roll back to release 1: the very next retrievals are all release 1.
    rolled = _post(f"{live_server.url}/api/v1/releases/1/rollback", token, {})
    assert (rolled["production"], rolled["canary"], rolled["noop"]) == (1, None, False)
    for n in range(20):
        answer = _post(retrieve, token, {"query": f"sign in to see my orders (after {n})", "k": 5})
        assert answer["release"] == 1 and [m["title"] for m in answer["items"]] == [LOGIN["title"]]
    # And forward again: release 2 as production.
    _post(f"{live_server.url}/api/v1/releases/2/rollback", token, {})
    answer = _post(retrieve, token, {"query": "sign in to see my orders", "k": 5})
    assert answer["release"] == 2 and {m["title"] for m in answer["items"]} == {LOGIN["title"], DATES["title"]}
