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


def _lesson_seen_again_from_a_disputed_run(bank):
    """A lesson first distilled from a run the agent and the judge agree on, then distilled again from a disputed
    run: the second distillation becomes supporting evidence on the first item, not an item of its own."""
    agreed = make_done_trajectory(bank, outcome="success", verdict="success")
    disputed = make_done_trajectory(bank, outcome="failure", verdict="success")
    item = propose_item(bank, agreed, title="Prefer the library's own page")
    again = propose_item(bank, disputed, title="Prefer the library's own page!")
    assert again.pk == item.pk and item.experience_id != disputed.experience_id  # support, not a new item
    return item, disputed


def test_the_filter_finds_the_items_a_disputed_run_supports(client, reviewer, bank):
    item, _disputed = _lesson_seen_again_from_a_disputed_run(bank)
    client.force_login(reviewer)
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    html = client.get(url, {"disagree": "on"}).content.decode()
    assert f'id="item-{item.public_id}"' in html
    row = html[html.index(f'id="item-{item.public_id}"') :]
    assert "failure ≠" in row[: row.index("</tr>")]  # what the supporting run's agent claimed
    ordered = client.get(url, {"sort": "disagreement"}).content.decode()
    assert 'disagree" title="The agent reported failure' in ordered


def test_the_dashboard_count_is_the_number_of_runs_its_link_lists(client, owner, bank):
    _lesson_seen_again_from_a_disputed_run(bank)
    _scene(bank)
    client.force_login(owner)
    html = client.get(reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})).content.decode()
    line = html[html.index("data-disagreements") :]
    line = line[: line.index("</p>")]
    href = line[line.index('href="') + 6 :]
    href = href[: href.index('"')].replace("&amp;", "&")
    assert "<strong>2</strong> trajectories where the agent and the judge disagree" in line
    assert href.startswith(reverse("trajectories:list", kwargs={"bank_id": bank.public_id}))
    listed = client.get(href).content.decode()
    assert listed.count("<tr data-row") == 2


def test_the_trajectory_list_filters_the_runs_the_agent_and_judge_disagree_on(client, reviewer, bank):
    make_done_trajectory(bank, outcome="failure", verdict="success", task="Disputed run")
    make_done_trajectory(bank, outcome="success", verdict="success", task="Agreed run")
    make_done_trajectory(bank, verdict="failure", task="Silent run")
    client.force_login(reviewer)
    url = reverse("trajectories:list", kwargs={"bank_id": bank.public_id})
    html = client.get(url, {"disagree": "on"}).content.decode()
    assert "Disputed run" in html and "Agreed run" not in html and "Silent run" not in html
    assert 'name="disagree"' in html and "checked" in html.split('name="disagree"', 1)[1][:40]
    assert "failure ≠" in html  # what the agent claimed, beside the verdict
    everything = client.get(url).content.decode()
    assert all(task in everything for task in ("Disputed run", "Agreed run", "Silent run"))
