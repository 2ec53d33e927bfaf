"""Disagreements first: the queue's filter and column for items distilled
from a trajectory whose reported outcome differs from its verdict, and the
dashboard's count of such trajectories (with its link to the filter)."""

from __future__ import annotations

from django.urls import reverse

from tests.factories import make_done_trajectory, propose_item


def _scene(bank):
    """Three items: from a run the agent called a failure and the judge a success, from one where they
    agree, and from one where the agent reported nothing."""
    disputed = make_done_trajectory(bank, outcome="failure", verdict="success")
    agreed = make_done_trajectory(bank, outcome="success", verdict="success", task="Find the museum hours.")
    silent = make_done_trajectory(bank, verdict="failure", task="Find the pool hours.")
    return (
        propose_item(bank, disputed, title="Disputed lesson"),
        propose_item(bank, agreed, title="Agreed lesson", content="Museums list holiday hours apart."),
        propose_item(bank, silent, title="Silent lesson", content="Pools close for cleaning on Mondays."),
    )


def test_the_filter_keeps_only_items_whose_run_the_agent_and_judge_disagree_on(client, reviewer, bank):
    disputed, agreed, silent = _scene(bank)
    client.force_login(reviewer)
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    html = client.get(url, {"disagree": "on"}).content.decode()
    assert disputed.title in html
    assert agreed.title not in html and silent.title not in html
    everything = client.get(url).content.decode()
    assert all(i.title in everything for i in (disputed, agreed, silent))


def test_the_column_says_what_the_agent_claimed_on_disputed_rows_only(client, reviewer, bank):
    disputed, _agreed, _silent = _scene(bank)
    client.force_login(reviewer)
    html = client.get(reverse("memories:review", kwargs={"bank_id": bank.public_id})).content.decode()
    assert html.count('disagree" title="The agent reported failure') == 1
    row = html[html.index(f'id="item-{disputed.public_id}"') :]
    row = row[: row.index("</tr>")]
    assert "failure ≠" in row


def test_the_dashboard_counts_disagreements_and_links_to_the_filter(client, owner, bank):
    _scene(bank)
    client.force_login(owner)
    html = client.get(reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})).content.decode()
    assert "<strong>1</strong> trajectory where the agent and the judge disagree" in html
    assert "?disagree=on" in html


def test_a_bank_without_disagreements_says_so(client, owner, bank):
    make_done_trajectory(bank, outcome="success", verdict="success")
    client.force_login(owner)
    html = client.get(reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})).content.decode()
    assert "No trajectory where the agent and the judge disagree." in html


def test_sort_orders_the_queue_and_the_focus_view_follows_it(client, reviewer, bank):
    disputed, agreed, silent = _scene(bank)
    client.force_login(reviewer)
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    html = client.get(url, {"sort": "newest"}).content.decode()
    assert html.index(silent.title) < html.index(agreed.title) < html.index(disputed.title)
    html = client.get(url, {"sort": "disagreement"}).content.decode()
    assert html.index(disputed.title) < html.index(agreed.title)
    focus = reverse("memories:review_focus", kwargs={"bank_id": bank.public_id, "item_id": agreed.public_id})
    page = client.get(focus, {"sort": "newest"}).content.decode()
    assert "data-progress>2 of 3<" in page
    assert f"/review/{disputed.public_id}/?sort=newest" in page.split("data-next", 1)[1][:300]
    assert f"/review/{silent.public_id}/?sort=newest" in page.split("data-prev", 1)[1][:300]


def test_an_unknown_sort_is_the_default_order(client, reviewer, bank):
    disputed, agreed, _silent = _scene(bank)
    client.force_login(reviewer)
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    html = client.get(url, {"sort": "'; drop"}).content.decode()
    assert html.index(disputed.title) < html.index(agreed.title)
