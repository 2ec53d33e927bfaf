"""The trajectories pages (list, detail with its relabel form and derived
panel; the dashboard's access too) through Django's test client: access by
role, the relabel write, escaping of hostile trajectory content."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories.items.models import ItemStatus
from tests.factories import make_done_trajectory, propose_item
from trajectories.models import Judgment, Trajectory

HTMX = {"HTTP_HX_REQUEST": "true"}


def page_urls(bank, item, trajectory):
    b = bank.public_id
    return {
        "dashboard": reverse("trajectories:dashboard", kwargs={"bank_id": b}),
        "trajectories": reverse("trajectories:list", kwargs={"bank_id": b}),
        "trajectory": reverse("trajectories:detail", kwargs={"bank_id": b, "trajectory_id": trajectory.public_id}),
    }


PAGES = ["dashboard", "trajectories", "trajectory"]


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


def test_hostile_step_content_renders_inert(client, owner, bank):
    evil = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
    t = make_done_trajectory(
        bank,
        task=evil,
        final_answer=evil,
        agent=evil,
        steps=[
            {"index": 0, "kind": "thought", "content": evil},
            {
                "index": 1,
                "kind": "tool_call",
                "content": "",
                "name": evil,
                "arguments": '{"q": "' + evil.replace('"', "'") + '"}',
            },
            {"index": 2, "kind": "<b>odd</b>", "content": evil, "is_error": True},
        ],
    )
    Judgment.objects.create(trajectory=t, source="llm", label="failure", rationale=evil)
    propose_item(bank, t, title=evil, description=evil, content=evil)
    client.force_login(owner)
    for url in [
        reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": t.public_id}),
        reverse("trajectories:list", kwargs={"bank_id": bank.public_id}),
        reverse("memories:review", kwargs={"bank_id": bank.public_id}),
        reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id}),
    ]:
        html = client.get(url).content.decode()
        assert "<script>window.pwned" not in html and "<img src=x" not in html and "<b>odd</b>" not in html
        assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html


def test_trajectory_detail_shows_steps_judgments_and_cited_items(client, owner, bank, trajectory, item):
    Judgment.objects.create(
        trajectory=trajectory, source="llm", label="success", rationale="Hours match the tool result.", model="fake"
    )
    client.force_login(owner)
    html = client.get(page_urls(bank, item, trajectory)["trajectory"]).content.decode()
    assert "web_search" in html and "&quot;q&quot;: &quot;city library hours&quot;" in html  # pretty-printed arguments
    assert "<details>" in html  # the 900-character observation is collapsed
    assert 'class="step kind-tool_result is-error' in html
    assert 'class="step kind-tool_call cited" id="step-2"' in html and item.title in html
    assert "Hours match the tool result." in html and "LLM judge" in html
    assert "Sundays 12:00-17:00." in html


def test_relabel_records_a_human_judgment_and_supersedes_old_items(client, reviewer, bank, trajectory, item, settings):
    settings.RB_LLM_BASE_URL = ""
    client.force_login(reviewer)
    url = reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})
    bad = client.post(url, {"label": "maybe", "reason": ""}, **HTMX)
    assert bad.status_code == 200 and "errorlist" in bad.content.decode()
    response = client.post(url, {"label": "failure", "reason": "the answer ignores the holiday closure"})
    assert response.status_code == 302
    judgment = Judgment.objects.get(trajectory=trajectory)
    assert (judgment.source, judgment.label, judgment.author) == ("human", "failure", reviewer)
    trajectory.refresh_from_db()
    item.refresh_from_db()
    assert trajectory.verdict == "failure" and item.status == ItemStatus.SUPERSEDED


def test_derived_panel_polls_only_while_the_pipeline_works(client, owner, bank, trajectory):
    client.force_login(owner)
    url = reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})
    Trajectory.objects.filter(pk=trajectory.pk).update(status="distilling")
    html = client.get(url, {"partial": "derived"}, **HTMX).content.decode()
    assert html.lstrip().startswith('<section id="derived"') and 'hx-trigger="every 2s"' in html
    Trajectory.objects.filter(pk=trajectory.pk).update(status="done")
    html = client.get(url, {"partial": "derived"}, **HTMX).content.decode()
    assert "every 2s" not in html
