"""The memories pages as owner, reviewer, viewer, another team's member and
anonymous, and bounded query counts on the list pages."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories.items.models import ItemStatus
from tests.factories import bulk_items, make_done_trajectory, propose_item
from tests.memories.views import item_action, page_urls
from trajectories.models import Judgment, Trajectory

PAGES = ["review", "focus", "items", "item", "playground"]


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("who", ["owner", "reviewer", "viewer"])
def test_members_read_every_page(client, request, bank, item, trajectory, page, who):
    client.force_login(request.getfixturevalue(who))
    response = client.get(page_urls(bank, item, trajectory)[page])
    assert response.status_code == 200
    assert bank.name in response.content.decode()


@pytest.mark.parametrize("page", PAGES)
def test_another_teams_member_gets_404(client, stranger, bank, item, trajectory, page):
    client.force_login(stranger)
    assert client.get(page_urls(bank, item, trajectory)[page]).status_code == 404


@pytest.mark.parametrize("page", PAGES)
def test_anonymous_is_sent_to_login(client, bank, item, trajectory, page):
    url = page_urls(bank, item, trajectory)[page]
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("accounts:login"))


def test_item_of_another_bank_is_404_even_for_a_member(client, owner, bank, other_bank):
    theirs = propose_item(other_bank, title="Their secret lesson")
    client.force_login(owner)
    url = reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": theirs.public_id})
    assert client.get(url).status_code == 404
    theirs_t = make_done_trajectory(other_bank)
    url = reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": theirs_t.public_id})
    assert client.get(url).status_code == 404


@pytest.mark.parametrize("who,status", [("viewer", 403), ("stranger", 404)])
def test_writes_are_refused_below_reviewer(client, request, bank, item, trajectory, who, status):
    client.force_login(request.getfixturevalue(who))
    urls = page_urls(bank, item, trajectory)
    assert client.post(item_action(bank, item, "approve")).status_code == status
    assert client.post(urls["review"], {"action": "approve", "items": [str(item.public_id)]}).status_code == status
    trajectory_url = reverse(
        "trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id}
    )
    assert client.post(trajectory_url, {"label": "failure", "reason": "wrong"}).status_code == status
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED
    assert not Judgment.objects.filter(trajectory=trajectory).exists()


def test_list_pages_have_bounded_queries(client, owner, bank, django_assert_max_num_queries):
    bulk_items(bank, 40)
    bulk_items(bank, 35, status=ItemStatus.APPROVED)
    Trajectory.objects.bulk_create(
        Trajectory(bank=bank, task=f"task {i}", agent=f"a{i % 4}", steps=[]) for i in range(45)
    )
    client.force_login(owner)
    b = bank.public_id
    # The dashboard's charts add 4 queries, whatever the data (tests/trajectories/test_dashboard_charts.py);
    # its count of agent/judge disagreements one, and its release notice one; its report (the agreement figures,
    # the distill outcomes, the charts) counts the approved items apart from the backlog (one), and is kept in
    # Django's database cache (six: a read that finds none, its cull count, a savepoint, a read, the write,
    # release). With the report kept, the page is 12 (tests/trajectories/dashboard/test_dashboard_report.py).
    budgets = {"memories:review": 12, "memories:items": 12, "trajectories:list": 12, "trajectories:dashboard": 25}
    for name, budget in budgets.items():
        url = reverse(name, kwargs={"bank_id": b})
        with django_assert_max_num_queries(budget):
            response = client.get(url)
        assert response.status_code == 200
    html = client.get(reverse("memories:review", kwargs={"bank_id": b})).content.decode()
    assert html.count('<tr id="item-') == 40
