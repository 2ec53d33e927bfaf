"""The review focus view's evidence panel (trajectories.judging.evidence_views): the
verdict and what set it, the judge's rationale, the outcome the agent
claimed, the final answer and the cited steps; agreeing in one POST (a human
label, no reason) and relabelling with the reason optional; access by role."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import make_done_trajectory, propose_item, record_verdict
from trajectories.models import Judgment, JudgmentSource

HTMX = {"HTTP_HX_REQUEST": "true"}


def evidence_url(bank, trajectory):
    return reverse("trajectories:evidence", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})


@pytest.fixture
def judged(bank):
    """A run the agent called a failure and the judge a success, with a rationale."""
    trajectory = make_done_trajectory(bank, outcome="failure", final_answer="Sundays 12:00-17:00 (from the site).")
    record_verdict(trajectory, "success", rationale="The answer matches the library's page.", model="judge-model")
    trajectory.refresh_from_db()
    propose_item(bank, trajectory, steps=(3,))
    return trajectory


def test_panel_shows_everything_needed_to_decide(client, owner, bank, judged):
    client.force_login(owner)
    html = client.get(evidence_url(bank, judged), **HTMX).content.decode()
    assert judged.task in html
    assert 'data-claimed><span class="badge failure">failure' in html
    assert "data-verdict-source>llm" in html and "from the judge" in html
    assert "The answer matches the library&#x27;s page." in html
    assert "data-disagreement" in html
    assert "Sundays 12:00-17:00 (from the site)." in html
    assert 'id="step-3"' in html and "step kind-tool_result cited" in html


def test_verdict_source_is_the_human_once_relabelled(client, owner, bank, judged):
    client.force_login(owner)
    response = client.post(evidence_url(bank, judged), {"action": "relabel", "label": "failure"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "Relabelled from success to failure" in html
    assert "data-verdict-source>human" in html
    judged.refresh_from_db()
    assert judged.verdict == "failure"


def test_agree_records_a_human_label_without_a_reason(client, reviewer, bank, judged):
    client.force_login(reviewer)
    response = client.post(evidence_url(bank, judged), {"action": "agree"}, **HTMX)
    assert "you agree with the verdict" in response.content.decode()
    human = Judgment.objects.get(trajectory=judged, source=JudgmentSource.HUMAN)
    assert (human.label, human.rationale, human.author) == ("success", "", reviewer)
    judged.refresh_from_db()
    assert judged.verdict == "success"


def test_agree_without_a_verdict_says_so(client, owner, bank):
    trajectory = make_done_trajectory(bank, verdict="")
    client.force_login(owner)
    response = client.post(evidence_url(bank, trajectory), {"action": "agree"}, **HTMX)
    assert "There is no verdict to agree with yet" in response.content.decode()
    assert not Judgment.objects.filter(trajectory=trajectory).exists()


def test_relabel_without_a_label_is_refused_with_a_message(client, owner, bank, judged):
    client.force_login(owner)
    response = client.post(evidence_url(bank, judged), {"action": "relabel", "label": "maybe"}, **HTMX)
    assert response.status_code == 200 and "Pick success or failure." in response.content.decode()
    assert not Judgment.objects.filter(trajectory=judged, source=JudgmentSource.HUMAN).exists()


def test_viewers_read_but_cannot_label(client, viewer, bank, judged):
    client.force_login(viewer)
    html = client.get(evidence_url(bank, judged), **HTMX).content.decode()
    assert "data-verdict" in html and "data-agree" not in html
    assert client.post(evidence_url(bank, judged), {"action": "agree"}, **HTMX).status_code == 403
    assert not Judgment.objects.filter(trajectory=judged, source=JudgmentSource.HUMAN).exists()


def test_another_team_and_anonymous(client, stranger, bank, judged):
    assert client.get(evidence_url(bank, judged), **HTMX).status_code == 302
    client.force_login(stranger)
    assert client.get(evidence_url(bank, judged), **HTMX).status_code == 404
    assert client.post(evidence_url(bank, judged), {"action": "agree"}, **HTMX).status_code == 404


def test_without_htmx_it_is_the_trajectory_page(client, owner, bank, judged):
    client.force_login(owner)
    response = client.get(evidence_url(bank, judged))
    assert response.status_code == 302 and response.url.endswith(f"/trajectories/{judged.public_id}/")


def test_judge_page_counts_human_labels_and_says_how_many_an_experiment_needs(client, owner, bank, judged):
    url = reverse("trajectories:judge", kwargs={"bank_id": bank.public_id})
    client.force_login(owner)
    assert "<strong>0</strong> trajectories have a human label" in client.get(url).content.decode()
    client.post(evidence_url(bank, judged), {"action": "agree"}, **HTMX)
    html = client.get(url).content.decode()
    assert "<strong>1</strong> trajectory has a human label" in html
    assert "An experiment needs about 30 held-out cases" in html
