"""The Impact page: access by role, the three states (no data, no holdout,
a comparison), the date-range filter, per-item rows and links, and a
bounded query count whatever the data size."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import make_arm, make_items, with_holdout


def impact_url(bank, **params):
    url = reverse("trajectories:impact", kwargs={"bank_id": bank.public_id})
    return url + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


@pytest.mark.parametrize("who", ["owner", "reviewer", "viewer"])
def test_members_see_the_page(client, request, bank, who):
    client.force_login(request.getfixturevalue(who))
    response = client.get(impact_url(bank))
    assert response.status_code == 200
    body = response.content.decode()
    assert bank.name in body and "Impact: does this bank help its agents?" in body
    assert f'href="{impact_url(bank)}"' in body  # in the bank nav


def test_another_teams_member_gets_404(client, bank, stranger):
    client.force_login(stranger)
    assert client.get(impact_url(bank)).status_code == 404


def test_anonymous_is_sent_to_login(client, bank):
    response = client.get(impact_url(bank))
    assert response.status_code == 302 and response["Location"].startswith(reverse("accounts:login"))


def test_empty_bank_explains_how_to_measure(client, owner, bank):
    client.force_login(owner)
    body = client.get(impact_url(bank)).content.decode()
    assert 'id="impact-empty"' in body
    assert "No holdout is configured" in body
    assert reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id}) in body
    assert "/api/v1/retrieve" in body and '"retrieval_id": "&lt;retrieval_id from above&gt;"' in body
    assert "Treatment arm only — not a comparison" in body
    assert 'id="arm-holdout"' not in body


def test_no_holdout_shows_treatment_only(client, owner, bank):
    make_arm(bank, "treatment", successes=40, failures=10)
    client.force_login(owner)
    body = client.get(impact_url(bank)).content.decode()
    assert "No holdout is configured" in body and "Treatment arm only — not a comparison" in body
    assert 'id="impact-empty"' not in body
    assert 'id="arm-treatment"' in body and "80.0%" in body
    assert 'id="arm-holdout"' not in body and 'id="difference"' not in body


def test_comparison_with_a_clear_lift(client, viewer, bank):
    with_holdout(bank, 0.5)
    weak, good = make_items(bank, 2)
    make_arm(bank, "treatment", successes=210, failures=90, items=[good], fraction=0.5)
    make_arm(bank, "treatment", successes=0, failures=30, items=[weak], fraction=0.5)
    make_arm(bank, "holdout", successes=90, failures=210, items=[good, weak], fraction=0.5)
    client.force_login(viewer)
    response = client.get(impact_url(bank))
    body = response.content.decode()
    report = response.context["report"]
    assert report.verdict == "helps" and 'class="notice verdict verdict-helps"' in body
    assert "The bank helps" in body and "always-valid 95% interval" in body
    assert 'id="arm-holdout"' in body and 'id="difference"' in body and 'class="liftbar verdict-helps"' in body
    assert f"+{report.difference.estimate * 100:.1f} pts" in body
    assert (
        f"{report.difference.cs_low_pts:.1f} to +{report.difference.cs_high_pts:.1f} points — the verdict uses" in body
    )
    assert (
        'id="fixed-interval"' in body and "Newcombe" in body and "valid only if this is the one time you look" in body
    )
    assert "Compared: retrievals assigned with a holdout of 50.0%" in body
    assert 'id="guardrails"' in body and body.count("passed —") == 2
    assert f"a lift of about {report.mde_pts:.0f} points would be detected" in body
    # Per item: links to each item; the weak one (0% of 30 against 30% withheld) is flagged after BH,
    # the good one (70% against 30%) marked as helping.
    for item in (weak, good):
        assert reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": item.public_id}) in body
    rows = {o.public_id: o for o in response.context["items"]}
    assert rows[weak.public_id].may_hurt and not rows[good.public_id].may_hurt and rows[good.public_id].may_help
    assert body.count("review: may hurt</span>") == 2  # the legend and the weak item's row
    assert "-30 pts" in body and "+40 pts" in body
    assert "Benjamini–Hochberg" in body
    assert "What it can conclude" in body and "What it cannot conclude" in body
    assert "do not report back" in body


def test_a_failed_guardrail_withholds_the_verdict_and_says_why(client, owner, bank):
    with_holdout(bank, 0.5)
    make_arm(bank, "treatment", successes=50, failures=10, unreported=40, fraction=0.5)
    make_arm(bank, "holdout", successes=50, failures=50, fraction=0.5)
    client.force_login(owner)
    body = client.get(impact_url(bank)).content.decode()
    assert 'class="notice verdict verdict-withheld"' in body and "No verdict: the two arms report back" in body
    assert '<span class="badge failure">failed</span> — 60.0% of treatment retrievals' in body


def test_not_enough_data_says_how_many_more(client, owner, bank):
    with_holdout(bank, 0.1)
    make_arm(bank, "treatment", successes=20, failures=5)
    make_arm(bank, "holdout", successes=3, failures=2)
    client.force_login(owner)
    body = client.get(impact_url(bank)).content.decode()
    assert "Not enough data yet" in body and "needs 5 more" in body and "needs 25 more" in body


@pytest.mark.parametrize("days,judged", [("7", 1), ("30", 3), ("90", 6), ("all", 10), ("bogus", 10), ("", 10)])
def test_date_range_filter(client, owner, bank, days, judged):
    make_arm(bank, "treatment", successes=1, days_ago=1)
    make_arm(bank, "treatment", successes=2, days_ago=20)
    make_arm(bank, "treatment", successes=3, days_ago=60)
    make_arm(bank, "treatment", successes=4, days_ago=200)
    client.force_login(owner)
    response = client.get(impact_url(bank, days=days))
    assert response.status_code == 200
    assert response.context["report"].treatment.judged == judged
    current = days if days in ("7", "30", "90") else "all"
    assert f'<a href="?days={current}" aria-current="page">' in response.content.decode()


def test_other_banks_data_never_shows(client, owner, bank, other_bank):
    theirs = make_items(other_bank, 1)[0]
    theirs.title = "THEIR-SECRET-ITEM"
    theirs.save(update_fields=["title"])
    make_arm(other_bank, "treatment", successes=50, items=[theirs])
    make_arm(other_bank, "holdout", successes=50, items=[theirs])
    client.force_login(owner)
    response = client.get(impact_url(bank))
    assert "THEIR-SECRET-ITEM" not in response.content.decode()
    assert response.context["report"].treatment.retrievals == 0 and response.context["items"] == []


def test_query_count_does_not_grow_with_data(client, owner, bank, django_assert_max_num_queries):
    with_holdout(bank)
    items = make_items(bank, 30)
    for n in range(0, 30, 3):
        make_arm(bank, "treatment", successes=5, failures=5, items=items[n : n + 3])
        make_arm(bank, "holdout", successes=3, failures=7, items=items[n : n + 3])
    client.force_login(owner)
    # session + user, membership, bank, 4 report queries (period ×2, arms, excluded), item aggregate, item titles.
    with django_assert_max_num_queries(10):
        response = client.get(impact_url(bank))
    assert len(response.context["items"]) == 30


def test_judged_trajectories_whose_retrieval_served_nothing_are_explained(client, owner, bank):
    make_arm(bank, "treatment", successes=1, triggered=False)
    client.force_login(owner)
    body = client.get(impact_url(bank)).content.decode()
    assert 'data-uncounted="treatment"' in body
    assert "Treatment: 1 retrieval, of which 0 with items." in body
    assert "left out of this comparison, and so are the trajectories sent with it" in body


def test_no_explanation_when_every_judged_trajectory_counts(client, owner, bank):
    make_arm(bank, "treatment", successes=2)
    client.force_login(owner)
    assert "data-uncounted" not in client.get(impact_url(bank)).content.decode()
