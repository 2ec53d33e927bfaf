"""A long trajectory's page: one page of steps at a time, jumps
to its errors / cited steps / final answer, the kind filter (whole page and
htmx fragment), and the MaTTS group page with its rollouts and contrast
items — by role, and 404 for another bank."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from django.urls import reverse

from tests.factories import make_done_trajectory, propose_item
from tests.long_trajectory import FINAL_ANSWER, contrast_items, error_indexes, long_steps, make_group
from trajectories.records.steps import STEP_PAGE_SIZE

HTMX = {"HTTP_HX_REQUEST": "true"}
FIRST_RESPONSE_BOUND = 60_000  # bytes of HTML for a 600-step run (244,002 before paging; 36,521 after)
CITED = (5, 300, 590)


def detail_url(t, **query):
    url = reverse("trajectories:detail", kwargs={"bank_id": t.bank.public_id, "trajectory_id": t.public_id})
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def group_url(t):
    return reverse("trajectories:group", kwargs={"bank_id": t.bank.public_id, "trajectory_id": t.public_id})


def shown_steps(html: str) -> list[tuple[int, str]]:
    """(index, classes) of each step article rendered."""
    return [
        (int(index), classes) for classes, index in re.findall(r'<article class="step ([^"]*)" id="step-(\d+)"', html)
    ]


def jump_hrefs(html: str, why: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r'<a data-jump="' + why + r'"\s+href="([^"]+)"', html)]


@pytest.fixture
def long_run(bank):
    t = make_done_trajectory(bank, steps=long_steps(600), final_answer=FINAL_ANSWER)
    propose_item(bank, t, steps=CITED)
    return t


def test_first_response_for_600_steps_is_one_bounded_page(client, owner, long_run):
    client.force_login(owner)
    response = client.get(detail_url(long_run))
    html = response.content.decode()
    assert response.status_code == 200
    assert len(response.content) < FIRST_RESPONSE_BOUND
    assert [i for i, _ in shown_steps(html)] == list(range(STEP_PAGE_SIZE))
    assert "Steps 1–50 of 600 · page 1 of 12" in html
    # The final answer is shown above the steps, not after 600 of them.
    assert html.index('id="final-answer"') < html.index('id="trajectory-steps"')
    assert FINAL_ANSWER in html


def test_jumps_lead_to_every_error_each_cited_step_and_the_last_step(client, owner, long_run):
    client.force_login(owner)
    html = client.get(detail_url(long_run)).content.decode()
    errors = error_indexes(long_steps(600))
    assert len(errors) == 15
    assert 'href="#final-answer"' in html

    def follow(href: str) -> tuple[int, str]:
        """The step a jump opens: its page is fetched, the anchor must be on it."""
        path, query, anchor = urlsplit(href).path, urlsplit(href).query, urlsplit(href).fragment
        page = html if not path else client.get(f"{path}?{query}").content.decode()
        index = int(anchor.removeprefix("step-"))
        return index, dict(shown_steps(page))[index]

    landed = [follow(href) for href in jump_hrefs(html, "error")]
    assert [i for i, _ in landed] == errors
    assert all("is-error" in classes for _, classes in landed)
    # The first error (step 3) is on this page: a plain anchor; the others open their page.
    assert jump_hrefs(html, "error")[0] == "#step-3"
    assert jump_hrefs(html, "error")[1:3] == ["#step-42", f"{detail_url(long_run)}?page=2#step-81"]
    landed = [follow(href) for href in jump_hrefs(html, "cited")]
    assert [i for i, _ in landed] == list(CITED)
    assert all("cited" in classes.split() for _, classes in landed)
    [(last, classes)] = [follow(href) for href in jump_hrefs(html, "last")]
    assert last == 599 and "kind-answer" in classes


def test_jumps_off_the_page_open_the_page_that_holds_the_step(client, owner, long_run):
    client.force_login(owner)
    html = client.get(detail_url(long_run)).content.decode()
    assert f'href="{detail_url(long_run)}?page=7#step-300"' in html
    assert f'href="{detail_url(long_run)}?page=12#step-599"' in html
    assert f'hx-get="{detail_url(long_run)}?page=7" hx-target="#trajectory-steps"' in html


@pytest.mark.parametrize("kind", ["tool_result", "thought", "answer"])
def test_kind_filter_shows_only_that_kind(client, owner, long_run, kind):
    client.force_login(owner)
    html = client.get(detail_url(long_run, kind=kind)).content.decode()
    shown = shown_steps(html)
    expected = [s["index"] for s in long_steps(600) if s["kind"] == kind][:STEP_PAGE_SIZE]
    assert [i for i, _ in shown] == expected
    assert all(f"kind-{kind}" in classes for _, classes in shown)
    assert re.search(rf'class="chip" data-kind="{kind}"[^>]*aria-current="true"', html)


def test_error_filter_as_an_htmx_fragment_holds_only_the_error_steps(client, owner, long_run):
    client.force_login(owner)
    response = client.get(detail_url(long_run, kind="errors"), HTTP_HX_TARGET="trajectory-steps", **HTMX)
    html = response.content.decode()
    assert "<html" not in html and html.lstrip().startswith('<section id="trajectory-steps"')
    shown = shown_steps(html)
    assert [i for i, _ in shown] == error_indexes(long_steps(600))
    assert all("is-error" in classes for _, classes in shown)
    assert "Steps (15 of 600)" in re.sub(r"<[^>]+>", "", html)


def test_cited_filter_and_paging_keep_the_filter(client, owner, bank):
    t = make_done_trajectory(bank, steps=long_steps(600))
    propose_item(bank, t, steps=range(10, 130))  # 120 cited steps: three pages of them
    client.force_login(owner)
    html = client.get(detail_url(t, kind="cited", page=2)).content.decode()
    assert [i for i, _ in shown_steps(html)] == list(range(60, 110))
    assert f'href="{detail_url(t)}?kind=cited&amp;page=3"' in html
    assert f'href="{detail_url(t)}?kind=cited"' in html  # previous: page 1


@pytest.mark.parametrize("query", [{"kind": "no-such-kind"}, {"page": "abc"}, {"page": "99999999999999999999"}])
def test_odd_filters_and_pages_answer_a_page_of_steps(client, owner, long_run, query):
    client.force_login(owner)
    response = client.get(detail_url(long_run, **query))
    assert response.status_code == 200
    assert len(shown_steps(response.content.decode())) == STEP_PAGE_SIZE


def test_long_steps_are_collapsed(client, owner, long_run):
    client.force_login(owner)
    html = client.get(detail_url(long_run)).content.decode()
    step21 = html[html.index('id="step-21"') : html.index('id="step-22"')]
    assert "<details><summary>" in step21 and "characters)" in step21
    step1 = html[html.index('id="step-1"') : html.index('id="step-2"')]
    assert "<details>" not in step1


def test_focus_view_fragment_opens_at_the_first_cited_step(client, owner, bank):
    t = make_done_trajectory(bank, steps=long_steps(600))
    propose_item(bank, t, steps=(300,))
    client.force_login(owner)
    kwargs = {"bank_id": bank.public_id, "trajectory_id": t.public_id}
    html = client.get(reverse("trajectories:steps", kwargs=kwargs), **HTMX).content.decode()
    assert [i for i, _ in shown_steps(html)] == list(range(300, 350))
    assert "open the trajectory" in html
    assert "hx-push-url" not in html  # the focus view's address stays the item's
    assert f'hx-get="{reverse("trajectories:steps", kwargs=kwargs)}?page=8"' in html
    # Without htmx the fragment's address opens the page with the same query.
    response = client.get(reverse("trajectories:steps", kwargs=kwargs) + "?kind=errors")
    assert response.status_code == 302 and response["Location"] == detail_url(t, kind="errors")


def test_relabel_still_works_on_a_long_trajectory(client, owner, long_run):
    client.force_login(owner)
    response = client.post(detail_url(long_run), {"label": "failure", "reason": "Wrong fare."}, **HTMX)
    assert response.status_code == 200
    long_run.refresh_from_db()
    assert long_run.verdict == "failure"
    assert 'id="derived"' in response.content.decode()


# --- the MaTTS group page ---------------------------------------------------------------------


@pytest.fixture
def group(bank):
    members = make_group(bank, 3)
    items = contrast_items(bank, members)
    return members, items


@pytest.mark.parametrize("who", ["owner", "reviewer", "viewer"])
def test_group_page_lists_every_rollout_with_its_verdict_and_the_contrast_items(client, request, group, who):
    members, items = group
    client.force_login(request.getfixturevalue(who))
    response = client.get(group_url(members[1]))
    html = response.content.decode()
    assert response.status_code == 200
    rollouts = re.findall(r'data-rollout="([^"]+)"', html)
    assert rollouts == [str(m.public_id) for m in members]
    verdicts = re.findall(r"data-verdict>(\w+)<", html)
    assert verdicts == ["success", "failure", "failure"]
    for m in members:
        assert f"Rollout {members.index(m)}: {400 + members.index(m)} EUR" in html  # each final answer
        assert f"{m.step_count} steps" in html
        assert detail_url(m) in html
    for item in items:
        assert (
            reverse("memories:item_detail", kwargs={"bank_id": item.bank.public_id, "item_id": item.public_id}) in html
        )
        assert item.title in html
    # Each contrast item says which step of which rollout it cites.
    assert f'href="{detail_url(members[1])}?step=3#step-3">rollout 2 #3</a>' in html
    # Key steps: the cited error step 3 and the last step, linking into each member's page.
    assert f'href="{detail_url(members[2])}#step-3"' in html
    assert f'href="{detail_url(members[2])}#step-{members[2].step_count - 1}"' in html
    assert re.search(rf'class="panel rollout current" id="rollout-2" data-rollout="{members[1].public_id}"', html)


def test_group_page_is_linked_from_each_member_and_the_list(client, owner, bank, group):
    members, _ = group
    client.force_login(owner)
    listing = client.get(reverse("trajectories:list", kwargs={"bank_id": bank.public_id})).content.decode()
    for m in members:
        assert f'href="{group_url(m)}"' in client.get(detail_url(m)).content.decode()
        assert f'href="{group_url(m)}"' in listing


def test_a_trajectory_in_no_group_redirects_to_its_page(client, owner, long_run):
    client.force_login(owner)
    response = client.get(group_url(long_run))
    assert response.status_code == 302 and response["Location"] == detail_url(long_run)


def test_another_banks_group_is_404(client, owner, stranger, bank, other_bank, group):
    members, _ = group
    theirs = make_group(other_bank, 2, group_id="matts-run-1")
    client.force_login(owner)
    # Their member's id under our bank, and our bank's page for a stranger: both unknown.
    ours_with_their_id = reverse(
        "trajectories:group", kwargs={"bank_id": bank.public_id, "trajectory_id": theirs[0].public_id}
    )
    assert client.get(ours_with_their_id).status_code == 404
    client.force_login(stranger)
    assert client.get(group_url(members[0])).status_code == 404
    # Same group id in two banks: each page shows only its own bank's rollouts.
    html = client.get(group_url(theirs[0])).content.decode()
    assert re.findall(r'data-rollout="([^"]+)"', html) == [str(m.public_id) for m in theirs]


def test_anonymous_is_sent_to_login_from_the_group_page(client, group):
    response = client.get(group_url(group[0][0]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("accounts:login"))


def test_derived_items_cite_links_open_the_page_holding_the_step(client, owner, long_run):
    client.force_login(owner)
    html = client.get(detail_url(long_run)).content.decode()
    cites = re.findall(r'<a data-cite href="([^"]+)"', html)
    assert cites == [f"{detail_url(long_run)}?step={i}#step-{i}" for i in CITED]
    page = client.get(detail_url(long_run, step=300)).content.decode()
    assert [i for i, _ in shown_steps(page)] == list(range(300, 350))
    assert client.get(detail_url(long_run, step="x")).status_code == 200


def test_group_page_queries_do_not_grow_with_the_group(client, owner, bank, django_assert_max_num_queries):
    small = make_group(bank, 2, group_id="small")
    large = make_group(bank, 8, group_id="large")
    contrast_items(bank, small)
    contrast_items(bank, large)
    client.force_login(owner)
    client.get(group_url(small[0]))  # warm the session and the bank lookups
    with django_assert_max_num_queries(14) as small_queries:
        assert client.get(group_url(small[0])).status_code == 200
    with django_assert_max_num_queries(len(small_queries)):
        response = client.get(group_url(large[0]))
    assert len(re.findall(r"data-rollout=", response.content.decode())) == 8
