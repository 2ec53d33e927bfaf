"""The review policy page: reviewers' guidelines (markdown, rendered with raw
HTML off) and the decisions each item needs; admins edit, members read,
another team's members get 404; the guidelines panel beside the queue and
the focus view."""

from __future__ import annotations

from django.urls import reverse

from memories.review.policy import review_policy_update
from memories.review.policy_models import ReviewPolicy, SavedQueueView

HOSTILE = "# Approve\n\nOnly **general** lessons.\n\n<script>alert(1)</script> [x](javascript:alert(1))"


def policy_url(bank):
    return reverse("memories:review_policy", kwargs={"bank_id": bank.public_id})


def test_an_admin_writes_guidelines_and_they_render_safely_beside_the_queue(client, owner, bank, item):
    client.force_login(owner)
    response = client.post(policy_url(bank), {"guidelines": HOSTILE, "decisions_required": "2"})
    assert response.status_code == 302
    policy = ReviewPolicy.objects.get(bank=bank)
    assert (policy.guidelines, policy.decisions_required) == (HOSTILE, 2)
    for url in (
        reverse("memories:review", kwargs={"bank_id": bank.public_id}),
        reverse("memories:review_focus", kwargs={"bank_id": bank.public_id, "item_id": item.public_id}),
    ):
        html = client.get(url).content.decode()
        assert "<h1>Approve</h1>" in html and "<strong>general</strong>" in html
        assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert 'href="javascript:' not in html


def test_a_bank_without_guidelines_says_so(client, reviewer, bank):
    client.force_login(reviewer)
    html = client.get(reverse("memories:review", kwargs={"bank_id": bank.public_id})).content.decode()
    assert "This bank has no guidelines yet." in html
    assert not ReviewPolicy.objects.exists()  # reading creates nothing


def test_reviewers_read_the_policy_but_cannot_change_it(client, reviewer, owner, bank):
    review_policy_update(bank=bank, actor=owner, guidelines="Be strict.", decisions_required=1)
    client.force_login(reviewer)
    html = client.get(policy_url(bank)).content.decode()
    assert "<p>Be strict.</p>" in html and 'id="policy-form"' not in html
    assert client.post(policy_url(bank), {"guidelines": "x", "decisions_required": "1"}).status_code == 403
    assert ReviewPolicy.objects.get(bank=bank).guidelines == "Be strict."


def test_out_of_range_values_re_render_with_errors(client, owner, bank):
    client.force_login(owner)
    response = client.post(policy_url(bank), {"guidelines": "", "decisions_required": "9"})
    assert response.status_code == 200 and "less than or equal to 5" in response.content.decode()
    assert not ReviewPolicy.objects.exists()


def test_another_team_and_anonymous(client, stranger, bank):
    assert client.get(policy_url(bank)).status_code == 302
    client.force_login(stranger)
    assert client.get(policy_url(bank)).status_code == 404
    assert client.post(policy_url(bank), {"guidelines": "x", "decisions_required": "1"}).status_code == 404


def test_a_reviewer_saves_the_queue_filters_as_a_view_and_opens_it_again(client, reviewer, alice, bank):
    queue = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    client.force_login(reviewer)
    html = client.get(queue, {"disagree": "on", "sort": "newest"}).content.decode()
    assert 'name="queue" value="disagree=on&amp;sort=newest"' in html
    save = reverse("memories:saved_view_create", kwargs={"bank_id": bank.public_id})
    response = client.post(save, {"name": "  Disputed,  newest ", "queue": "disagree=on&sort=newest&page=3"})
    assert response.status_code == 302 and response.url == f"{queue}?disagree=on&sort=newest"
    html = client.get(queue).content.decode()
    assert f'href="{queue}?disagree=on&amp;sort=newest" data-saved-view>Disputed, newest</a>' in html
    view = SavedQueueView.objects.get()
    client.force_login(alice)  # another reviewer sees their own views only, and cannot delete this one
    assert "Disputed, newest" not in client.get(queue).content.decode()
    remove = reverse("memories:saved_view_remove", kwargs={"bank_id": bank.public_id})
    assert "No such saved view." in client.post(remove, {"view": str(view.public_id)}, follow=True).content.decode()
    client.force_login(reviewer)
    assert "Saved view deleted." in client.post(remove, {"view": str(view.public_id)}, follow=True).content.decode()
    assert not SavedQueueView.objects.exists()


def test_a_view_needs_a_name(client, reviewer, bank):
    client.force_login(reviewer)
    save = reverse("memories:saved_view_create", kwargs={"bank_id": bank.public_id})
    assert "Name the view" in client.post(save, {"name": " ", "queue": "dup=on"}, follow=True).content.decode()
    assert not SavedQueueView.objects.exists()


def test_the_bank_settings_lead_to_the_review_policy(client, viewer, bank):
    client.force_login(viewer)
    html = client.get(reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id})).content.decode()
    assert f'href="{policy_url(bank)}">Review policy</a>' in html
