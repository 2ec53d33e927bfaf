"""The evaluation pages in real Chromium: a finished run's page with its charts fits a laptop and a
phone without scrolling sideways; the form starts a run; an open run's progress follows the tries as
they are recorded, by itself, and stops following once the run is finished."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from memories.releases.models import BankReleasing
from tests.trajectories.evaluation.pages_data import finished_run, make_release, make_run, make_task_set
from tests.ui.conftest import signed_in
from trajectories.evaluation.models import AttemptState, EvalAttempt, EvalRun, RunState

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def releases(bank):
    one, two = make_release(bank, 1), make_release(bank, 2)
    BankReleasing.objects.create(bank=bank, latest=2, production=one)
    bank.release_production = 1
    bank.save(update_fields=["release_production"])
    return {"production": one, "candidate": two}


def _detail(run) -> str:
    return reverse(
        "trajectories:evaluation_detail", kwargs={"bank_id": run.bank.public_id, "evaluation_id": run.public_id}
    )


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
def test_a_finished_runs_page_shows_its_charts_and_fits_the_screen(
    browser, live_server, owner, bank, releases, width, height
):
    from playwright.sync_api import expect

    task_set = make_task_set(bank, tasks=50)
    run, _ = finished_run(bank, task_set, releases=releases)
    context, page = signed_in(browser, live_server, owner, width, height)
    try:
        page.goto(f"{live_server.url}{_detail(run)}")
        expect(page.locator("#chart-paired-production svg")).to_be_visible()
        assert page.locator("#chart-paired-production circle.point").count() == 50
        expect(page.locator("#chart-pass-k svg")).to_be_visible()
        expect(page.locator("#chart-cost svg")).to_be_visible()
        expect(page.locator("#chart-history svg")).to_be_visible()
        expect(page.locator("#evaluation-arms tr[data-arm=candidate]")).to_be_visible()
        box = page.locator("#chart-paired-production svg").bounding_box()
        assert box["width"] >= 250 and box["x"] + box["width"] <= width  # drawn at a readable size, inside the screen
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), page.evaluate(
            "[document.documentElement.scrollWidth, window.innerWidth]"
        )
        # The numbers behind a chart open in place.
        page.locator("#chart-cost summary").click()
        expect(page.locator("#chart-cost table")).to_contain_text("Same-budget control")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        # A flipped task opens its tries.
        page.locator("[data-versus=production] [data-flipped] a").first.click()
        expect(page.locator("#task-tries")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        context.close()


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
def test_the_form_starts_a_run_and_opens_its_page(browser, live_server, owner, bank, releases, width, height):
    from playwright.sync_api import expect

    make_task_set(bank, tasks=4, name="smoke tasks")
    context, page = signed_in(browser, live_server, owner, width, height)
    try:
        page.goto(f"{live_server.url}{reverse('trajectories:evaluations', kwargs={'bank_id': bank.public_id})}")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        form = page.locator("form.evalform")
        form.locator("select[name=task_set]").select_option(label="smoke tasks")
        form.locator("input[name=arms][value=none]").check()
        form.locator("input[name=arms][value=control]").uncheck()
        form.locator("input[name=k]").fill("21")
        form.locator("button[type=submit]").click()
        expect(page.locator(".field.has-error")).to_contain_text("20")  # refused: k is 1..20
        assert not EvalRun.objects.exists()
        form.locator("input[name=k]").fill("2")
        form.locator("input[name=note]").fill("Release 2 first look")
        form.locator("button[type=submit]").click()
        expect(page.locator("#run-command")).to_contain_text("rb eval run ")
        run = EvalRun.objects.get()
        assert page.url.endswith(_detail(run))
        assert [a.kind for a in run.arms.all()] == ["candidate", "production", "none"]
        expect(page.locator("#run-arms")).to_contain_text("release 2")
        expect(page.locator("#progress-text")).to_contain_text("0 of 24")
    finally:
        context.close()


def test_an_open_runs_progress_follows_the_tries_and_stops_when_finished(browser, live_server, owner, bank, releases):
    from playwright.sync_api import expect

    run = make_run(
        bank, make_task_set(bank, tasks=5), kinds=("production", "none"), k=2, state=RunState.OPEN, releases=releases
    )
    context, page = signed_in(browser, live_server, owner, 1366, 768)
    try:
        page.goto(f"{live_server.url}{_detail(run)}")
        progress = page.locator("#progress-text")
        expect(progress).to_contain_text("0 of 20")
        live = page.locator("#evaluation-live")
        assert live.get_attribute("hx-trigger") == "every 3s"

        now = timezone.now()
        first = list(EvalAttempt.objects.filter(run=run).order_by("id").values_list("pk", flat=True)[:7])
        EvalAttempt.objects.filter(pk__in=first).update(state=AttemptState.RECORDED, check_passed=True, recorded_at=now)
        EvalRun.objects.filter(pk=run.pk).update(tries_recorded=7, last_activity_at=now)
        expect(progress).to_contain_text("7 of 20", timeout=10_000)  # no reload: the region polls itself

        EvalAttempt.objects.filter(run=run).update(state=AttemptState.RECORDED, check_passed=False, recorded_at=now)
        EvalRun.objects.filter(pk=run.pk).update(
            tries_recorded=20, state=RunState.FINISHED, finished_at=now, results={"complete": True}
        )
        expect(live).to_have_attribute("data-run-state", "finished", timeout=10_000)
        expect(progress).to_contain_text("20 of 20")
        assert live.get_attribute("hx-trigger") is None  # finished with every outcome known: it stops polling
    finally:
        context.close()
