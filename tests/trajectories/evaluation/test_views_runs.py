"""The evaluation pages: the bank's runs with the form that starts one, a run's page (progress, the
command, cancel, the per-arm table, the comparisons) and a task's tries; who may see and do what."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from accounts.models import Role
from memories.releases.models import BankReleasing
from tests.factories import make_member, make_trajectory
from tests.trajectories.evaluation.pages_data import finished_run, make_release, make_run, make_task_set
from trajectories.evaluation.models import AttemptState, EvalAttempt, EvalRun, RunState

pytestmark = pytest.mark.django_db


def _list(bank):
    return reverse("trajectories:evaluations", kwargs={"bank_id": bank.public_id})


def _detail(run):
    return reverse(
        "trajectories:evaluation_detail", kwargs={"bank_id": run.bank.public_id, "evaluation_id": run.public_id}
    )


@pytest.fixture
def task_set(bank):
    return make_task_set(bank)


@pytest.fixture
def releases(bank):
    """Releases 1 (production) and 2 (the candidate)."""
    one, two = make_release(bank, 1), make_release(bank, 2)
    BankReleasing.objects.create(bank=bank, latest=2, production=one)
    bank.release_production = 1
    bank.save(update_fields=["release_production"])
    return {"production": one, "candidate": two}


def test_the_list_shows_each_run_with_its_state_task_set_arms_progress_and_verdict(
    client, owner, bank, task_set, releases
):
    finished, _ = finished_run(bank, task_set, releases=releases, note="Release 2 against production")
    make_run(bank, task_set, kinds=("production", "none"), state=RunState.OPEN, note="Still running")
    client.force_login(owner)
    html = client.get(_list(bank)).content.decode()
    assert "Release 2 against production" in html and "Still running" in html
    assert _detail(finished) in html
    assert "checkout tasks" in html
    assert "Candidate release #2, Production #1, No memory, Same-budget control" in html
    assert f"{finished.tries_total} / {finished.tries_total}" in html  # every try recorded
    assert "0 / 72" in html  # the open one: 12 tasks × 2 arms × k=3, none recorded
    assert html.count("better") >= 1
    assert 'aria-current="page">Evaluations</a>' in html  # the bank's navigation marks the page


def test_a_viewer_sees_the_runs_but_not_the_form_and_may_not_start_one(client, team, bank, task_set, releases):
    viewer = make_member(team, Role.VIEWER)
    client.force_login(viewer)
    page = client.get(_list(bank))
    assert page.status_code == 200 and 'id="evaluation-new"' not in page.content.decode()
    posted = client.post(_list(bank), {"task_set": task_set.public_id, "arms": ["candidate", "production"], "k": 3})
    assert posted.status_code == 403
    assert not EvalRun.objects.exists()


def test_another_teams_member_gets_404_and_a_visitor_the_login_page(client, stranger, bank, task_set, releases):
    run, _ = finished_run(bank, task_set, releases=releases)
    client.force_login(stranger)
    for url in (_list(bank), _detail(run)):
        assert client.get(url).status_code == 404
    client.logout()
    assert client.get(_detail(run)).status_code == 302


def test_a_run_of_another_bank_is_404_under_this_banks_address(client, owner, bank, other_bank):
    theirs = make_run(other_bank, make_task_set(other_bank), kinds=("none", "control"))
    client.force_login(owner)
    url = reverse(
        "trajectories:evaluation_detail", kwargs={"bank_id": bank.public_id, "evaluation_id": theirs.public_id}
    )
    assert client.get(url).status_code == 404


def test_a_bank_without_task_sets_says_how_to_make_one_instead_of_the_form(client, owner, bank):
    client.force_login(owner)
    html = client.get(_list(bank)).content.decode()
    assert 'id="no-task-sets"' in html and '<form method="post" class="evalform"' not in html


def test_the_form_offers_the_banks_task_sets_and_releases_newest_first(client, owner, bank, task_set, releases):
    make_task_set(bank, name="other set")
    client.force_login(owner)
    form = client.get(_list(bank)).context["form"]
    assert [str(ts) for ts in form.fields["task_set"].queryset] == ["checkout tasks", "other set"]
    assert [value for value, _ in form.fields["release"].choices] == ["", 2, 1]
    assert form.initial["release"] == 2


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"k": "0"}, "k"),
        ({"k": "21"}, "k"),
        ({"k": "three"}, "k"),
        ({"token_budget": "-5"}, "token_budget"),
        ({"release": "9"}, "release"),
    ],
)
def test_a_form_the_form_itself_refuses_shows_the_error_and_saves_nothing(
    client, owner, bank, task_set, releases, fields, field
):
    client.force_login(owner)
    data = {"task_set": task_set.public_id, "arms": ["candidate", "production"], "release": "2", "k": "3", **fields}
    page = client.post(_list(bank), data)
    assert page.status_code == 200
    assert page.context["form"].errors[field]
    assert 'class="errorlist"' in page.content.decode()
    assert not EvalRun.objects.exists()


def test_a_refusal_of_the_service_is_shown_on_the_form_and_nothing_is_saved(client, owner, bank, task_set, releases):
    client.force_login(owner)
    page = client.post(_list(bank), {"task_set": task_set.public_id, "arms": ["candidate"], "release": "2", "k": "3"})
    assert page.status_code == 200
    errors = page.context["form"].non_field_errors()
    assert errors and "arms" in errors[0]
    assert escape(errors[0]) in page.content.decode()
    assert not EvalRun.objects.exists() and not EvalAttempt.objects.exists()


def test_a_reviewer_starts_a_run_and_lands_on_its_page_with_the_command(client, team, bank, task_set, releases):
    reviewer = make_member(team, Role.REVIEWER)
    client.force_login(reviewer)
    data = {
        "task_set": task_set.public_id,
        "arms": ["candidate", "production", "control"],
        "release": "2",
        "k": "2",
        "token_budget": "4000",
        "note": "Release 2 before publishing",
    }
    page = client.post(_list(bank), data, follow=True)
    run = EvalRun.objects.get()
    assert page.redirect_chain[-1][0] == _detail(run)
    assert (run.k, run.token_budget, run.note, run.tries_total) == (2, 4000, "Release 2 before publishing", 12 * 3 * 2)
    assert {a.kind: a.release for a in run.arms.all()} == {
        "candidate": releases["candidate"],
        "production": releases["production"],
        "control": None,
    }
    html = page.content.decode()
    assert f"rb eval run {run.public_id} -- &lt;your agent command&gt;" in html
    assert "<code>RB_URL=http://testserver</code>" in html  # where the harness finds the service


def test_unchecking_the_candidate_sends_no_release_so_production_against_no_memory_starts(
    client, owner, bank, task_set, releases
):
    client.force_login(owner)
    client.post(_list(bank), {"task_set": task_set.public_id, "arms": ["production", "none"], "release": "2", "k": "1"})
    assert [a.kind for a in EvalRun.objects.get().arms.all()] == ["production", "none"]


def test_a_finished_run_shows_its_arms_table_comparisons_and_flipped_tasks(client, owner, bank, task_set, releases):
    run, _ = finished_run(bank, task_set, releases=releases)
    run.results["comparisons"][1]["p_value"] = 0.00000171
    run.save(update_fields=["results"])
    client.force_login(owner)
    page = client.get(_detail(run))
    html = page.content.decode()
    assert "p = 0.010" in html and "p &lt; 0.001" in html and "p = 0.000" not in html
    assert "hx-trigger" not in html  # finished with every outcome known: nothing to poll
    candidate = run.results["arms"]["candidate"]
    assert f"{candidate['success_rate'] * 100:.0f}%" in html
    assert f"{candidate['pass_hat_k']['3'] * 100:.0f}%" in html
    assert "2,400" in html and "$0.0010" in html  # tokens and cost per try
    for kind in ("candidate", "production", "none", "control"):
        assert f'<tr data-arm="{kind}">' in html
    # Pinned releases, linked.
    assert (
        reverse(
            "trajectories:release_detail",
            kwargs={"bank_id": bank.public_id, "release_id": releases["candidate"].public_id},
        )
        in html
    )
    for comparison in run.results["comparisons"]:
        assert f'data-versus="{comparison["versus"]}"' in html
        for key in comparison["flipped"]["better"] + comparison["flipped"]["worse"]:
            link = reverse(
                "trajectories:evaluation_task",
                kwargs={"bank_id": bank.public_id, "evaluation_id": run.public_id, "task_key": key},
            )
            assert f'href="{link}"' in html
    assert "The candidate is better than production, also at equal cost." in html


def test_an_open_run_polls_its_live_region_and_htmx_gets_that_region_alone(client, owner, bank, task_set, releases):
    run = make_run(bank, task_set, state=RunState.OPEN, releases=releases)
    client.force_login(owner)
    html = client.get(_detail(run)).content.decode()
    assert 'id="evaluation-live"' in html and 'hx-trigger="every 3s"' in html
    assert "0 of 144</strong> tries recorded" in html
    part = client.get(_detail(run), headers={"HX-Request": "true", "HX-Target": "evaluation-live"}).content.decode()
    assert part.lstrip().startswith('<div id="evaluation-live"') and "<html" not in part


def test_a_poll_when_nothing_changed_answers_204_so_the_region_stays_as_it_is(client, owner, bank, task_set, releases):
    run = make_run(bank, task_set, state=RunState.OPEN, releases=releases)
    client.force_login(owner)
    htmx = {"HX-Request": "true", "HX-Target": "evaluation-live"}
    html = client.get(_detail(run)).content.decode()
    poll = re.search(r'hx-get="([^"]+)" hx-trigger="every 3s"', html).group(1).replace("&amp;", "&")
    assert client.get(poll, headers=htmx).status_code == 204
    attempt = EvalAttempt.objects.filter(run=run).first()
    EvalAttempt.objects.filter(pk=attempt.pk).update(state=AttemptState.RECORDED, check_passed=True)
    EvalRun.objects.filter(pk=run.pk).update(tries_recorded=1, last_activity_at=timezone.now())
    changed = client.get(poll, headers=htmx)
    assert changed.status_code == 200 and "1 of 144</strong> tries recorded" in changed.content.decode()
    again = re.search(r'hx-get="([^"]+)"', changed.content.decode()).group(1).replace("&amp;", "&")
    assert again != poll and client.get(again, headers=htmx).status_code == 204


def test_an_abandoned_run_says_how_far_it_got_and_how_to_resume_and_stops_polling(
    client, owner, bank, task_set, releases
):
    run = make_run(bank, task_set, state=RunState.OPEN, releases=releases)
    done = list(EvalAttempt.objects.filter(run=run).order_by("id")[:50])
    EvalAttempt.objects.filter(pk__in=[a.pk for a in done]).update(state=AttemptState.RECORDED, check_passed=True)
    long_ago = timezone.now() - timedelta(hours=3)
    EvalRun.objects.filter(pk=run.pk).update(tries_recorded=50, last_activity_at=long_ago, created_at=long_ago)
    client.force_login(owner)
    html = client.get(_detail(run)).content.decode()
    assert 'id="abandoned"' in html and "stopped after\n    50 of 144 tries" in html
    assert f"rb eval run {run.public_id}" in html
    assert "hx-trigger" not in html


def test_a_reviewer_cancels_an_open_run_and_a_viewer_may_not(client, team, bank, task_set, releases):
    run = make_run(bank, task_set, state=RunState.OPEN, releases=releases)
    client.force_login(make_member(team, Role.VIEWER))
    assert 'id="evaluation-cancel"' not in client.get(_detail(run)).content.decode()
    assert client.post(_detail(run), {"action": "cancel"}).status_code == 403
    run.refresh_from_db()
    assert run.state == RunState.OPEN
    client.force_login(make_member(team, Role.REVIEWER))
    page = client.post(_detail(run), {"action": "cancel"}, follow=True)
    run.refresh_from_db()
    assert run.state == RunState.CANCELLED
    assert "Cancelled after 0 of 144 tries" in page.content.decode()


def test_the_task_page_lists_each_try_with_its_outcome_and_trajectory(client, owner, bank, task_set, releases):
    run, outcomes = finished_run(bank, task_set, releases=releases)
    judged = EvalAttempt.objects.filter(run=run, task__key="task-03", arm__kind="none", number=1).get()
    judged.check_passed, judged.trajectory = None, make_trajectory(bank, task="Buy item 3")
    judged.save()
    client.force_login(owner)
    url = reverse(
        "trajectories:evaluation_task",
        kwargs={"bank_id": bank.public_id, "evaluation_id": run.public_id, "task_key": "task-03"},
    )
    html = client.get(url).content.decode()
    assert "Buy item 3 and report the order number" in html
    assert html.count("<tr data-arm=") == 4 * 3
    wins = sum(sum(outcomes[kind]["task-03"]) for kind in outcomes) - int(outcomes["none"]["task-03"][0])
    assert html.count('badge success">success') == wins
    assert "being judged" in html  # its trajectory has no verdict yet
    assert (
        reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": judged.trajectory.public_id})
        in html
    )
    missing = reverse(
        "trajectories:evaluation_task",
        kwargs={"bank_id": bank.public_id, "evaluation_id": run.public_id, "task_key": "nope"},
    )
    assert client.get(missing).status_code == 404


@pytest.mark.parametrize("key", ["a%00b", "%ED%A0%80", "x" * 3000, "..%2F..%2Fetc"])
def test_a_hostile_task_key_in_the_address_is_a_404_never_an_error(client, owner, bank, task_set, releases, key):
    run, _ = finished_run(bank, task_set, releases=releases)
    client.force_login(owner)
    client.raise_request_exception = False
    url = reverse("trajectories:evaluation_detail", kwargs={"bank_id": bank.public_id, "evaluation_id": run.public_id})
    assert client.get(f"{url}tasks/{key}/").status_code == 404


@pytest.mark.parametrize("action", ["", "cancel\x00", "\udcff", "x" * 100_000])
def test_a_hostile_action_changes_nothing_and_says_so(client, owner, bank, task_set, releases, action):
    run = make_run(bank, task_set, state=RunState.OPEN, releases=releases)
    client.force_login(owner)
    client.raise_request_exception = False
    from urllib.parse import urlencode

    body = urlencode({"action": action.encode("utf-8", "surrogateescape")})
    response = client.post(_detail(run), body, content_type="application/x-www-form-urlencoded", follow=True)
    assert response.status_code == 200 and "Unknown action" in response.content.decode()
    run.refresh_from_db()
    assert run.state == RunState.OPEN


def test_the_list_takes_the_same_queries_for_two_runs_as_for_six(client, owner, bank, task_set, releases):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(owner)
    counts = []
    for _ in range(2):
        for _ in range(2 if not counts else 4):
            finished_run(bank, task_set, releases=releases)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(_list(bank)).status_code == 200
        counts.append(len(queries))
    assert EvalRun.objects.count() == 6
    assert counts[0] == counts[1], counts


def test_the_list_links_the_task_sets_page(client, owner, bank):
    from django.urls import NoReverseMatch

    try:
        url = reverse("trajectories:task_sets", kwargs={"bank_id": bank.public_id})
    except NoReverseMatch:
        pytest.skip("the task sets pages are not in this build")
    client.force_login(owner)
    html = client.get(_list(bank)).content.decode()
    assert f'<a href="{url}" id="task-sets-link">' in html
    assert f'on the <a href="{url}">task sets page</a>' in html  # no task set yet: where to make one
