"""The Judge page in a real headless Chromium: an admin edits the judge
prompt (a refused version shows its errors, a valid one is saved as a
candidate with its diff), runs an experiment against the current judge and
promotes the candidate with one click. The fake LLM answers per prompt
version; Celery runs eagerly in the live server's request thread."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests import factories
from tests.trajectories.judging.test_experiments import CANDIDATE_MARK, judge_by_version, labelled
from trajectories.judging.models import Experiment, PromptVersion
from trajectories.judging.prompt_versions import prompt_active
from trajectories.prompts import prompt_load

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_edit_the_judge_prompt_run_an_experiment_and_promote(
    page, live_server, login, bank, owner, fake_llm, eager_celery
):
    for label in ("success", "failure", "success", "failure", "success"):
        labelled(lambda **data: factories.make_trajectory(bank, **data), label)
    fake_llm.responder = judge_by_version
    url = f"/banks/{bank.public_id}/judge/prompts/judge/"
    login(page, live_server, owner, url)

    default = prompt_load("judge")[0]
    page.fill("#id_text", default.replace("$trajectory", "(no record)"))
    page.click("#prompt-form button[type=submit]")
    assert "The placeholder $trajectory is missing" in page.locator("#prompt-form .errorlist").inner_text()
    assert not PromptVersion.objects.exists()

    page.fill("#id_text", f"{CANDIDATE_MARK}\n{default}")
    page.fill("#id_note", "stricter")
    expect(page.locator("#id_activate")).not_to_be_checked()  # an edit is a candidate unless asked
    page.click("#prompt-form button[type=submit]")
    version = f"judge@bank-{bank.pk}-v1"
    shown = "judge v1 (custom)"  # its name without the bank's internal id
    page.wait_for_selector("#version-1")
    assert page.locator("#in-use").inner_text() == "judge v1 (default)"  # a candidate is not used yet
    assert page.locator("#editing").inner_text() == shown
    assert page.locator("#diff .diff-added").first.inner_text() == f"+ {CANDIDATE_MARK}"

    page.goto(f"{live_server.url}/banks/{bank.public_id}/judge/")
    page.select_option("#id_candidate_prompt", label=f"{shown} stricter")
    page.click("#experiment-form button[type=submit]")
    article = page.locator("article.experiment").first
    article.locator("[data-status=done]").wait_for()
    assert "100% [57–100%] n=5" in article.locator(".arm-candidate").inner_text()
    assert "60% [23–88%] n=5" in article.locator(".arm-baseline").inner_text()

    article.get_by_role("button", name="Promote the candidate").click()
    page.locator("article.experiment .badge", has_text="promoted").wait_for()
    assert page.locator("#prompt-judge code").inner_text() == shown
    assert prompt_active(bank=bank, name="judge").version == version
    assert Experiment.objects.get().promoted_by == owner
