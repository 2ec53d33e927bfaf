"""The demo LLM (`RB_LLM_DEMO=1 make run`): an OpenAI-compatible endpoint the workers reach through the real
``openai`` client; what it makes is recorded under its own model name and labelled "Demo LLM" wherever verdicts
and items are shown; it never stands in for a configured endpoint."""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer

import pytest
from django.urls import reverse

from memories.items.models import MemoryItem
from reasoningbank_site.management.commands.rb_run import Command
from tests.factories import process_trajectory
from trajectories.models import JudgmentSource, Status
from trajectories.pipeline import demo_llm
from trajectories.pipeline.llm import chat, judge_model_for, llm_demo_active, llm_demo_wanted

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]

SUCCESS_STEPS = [
    {"kind": "action", "name": "search", "content": "search('USB-C cable 2m')"},
    {"kind": "observation", "content": "12 results"},
    {"kind": "action", "name": "open_page", "content": "open('cable-2m')", "is_error": True},
    {"kind": "action", "name": "open_page", "content": "open('cable-2m-b')"},
    {"kind": "answer", "content": "Added the 2 m cable for $5.99 to the cart."},
]


@pytest.fixture
def demo_endpoint(settings, monkeypatch):
    """The demo LLM's own server on a free port, the app pointed at it as rb_run points its children."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), demo_llm.Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    env = demo_llm.endpoint_env(url)
    monkeypatch.setenv(demo_llm.DEMO_ENDPOINT_ENV, env[demo_llm.DEMO_ENDPOINT_ENV])
    settings.RB_LLM_BASE_URL, settings.RB_LLM_MODEL, settings.OPENAI_API_KEY = url, env["RB_LLM_MODEL"], ""
    yield url
    server.shutdown()
    server.server_close()


def _page(client, user, url):
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_demo_judges_and_distills_through_the_openai_client_and_records_itself(
    demo_endpoint, bank, make_trajectory
):
    bank.judge_model = bank.distill_model = "gpt-4o"  # a bank's own choice cannot hide that the demo made them
    bank.save(update_fields=["judge_model", "distill_model"])
    t = process_trajectory(
        make_trajectory(
            task="Buy the cheapest 2 m USB-C cable",
            steps=SUCCESS_STEPS,
            final_answer="Added the 2 m cable for $5.99 to the cart.",
        )
    )
    assert t.status == Status.DONE and t.verdict == "success"
    judgment = t.judgments.get(source=JudgmentSource.LLM)
    assert judgment.model == demo_llm.DEMO_MODEL
    assert judgment.rationale.startswith(demo_llm.RATIONALE_PREFIX)
    assert "$5.99" in judgment.rationale and "1 of them tool errors" in judgment.rationale
    items = list(MemoryItem.objects.filter(bank=bank))
    assert 1 <= len(items) <= 3
    assert {item.model for item in items} == {demo_llm.DEMO_MODEL}
    assert any(item.title == "Check the result of each open_page call" for item in items)
    assert all(item.cited_steps for item in items), [item.cited_steps for item in items]


def test_a_run_that_ends_in_an_error_is_judged_a_failure_with_the_step_named(demo_endpoint, make_trajectory):
    steps = [
        {"kind": "action", "name": "login", "content": "login(user)"},
        {"kind": "action", "name": "pay", "content": "pay(order 7) -> 502 Bad Gateway", "is_error": True},
    ]
    t = process_trajectory(make_trajectory(task="Pay the order", steps=steps, final_answer="Paid."))
    assert t.verdict == "failure"
    rationale = t.judgments.get(source=JudgmentSource.LLM).rationale
    assert "last step (step 1) is an error" in rationale
    assert MemoryItem.objects.filter(bank=t.bank, origin="failure").exists()


def test_its_answers_are_deterministic(demo_endpoint):
    prompt = "<trajectory>\n<task>\nFind x\n</task>\n<steps>\n[step 0] action search:\nq\n</steps>\n"
    prompt += '<final_answer>\nx is 4\n</final_answer>\n</trajectory>\nAnswer {"verdict": ...}'
    answers = {chat(model="any", messages=[{"role": "user", "content": prompt}]) for _ in range(3)}
    assert len(answers) == 1
    assert json.loads(answers.pop())["verdict"] == "success"


def test_a_configured_endpoint_always_wins_over_the_demo(settings, monkeypatch, fake_llm, bank, make_trajectory):
    monkeypatch.setenv("RB_LLM_DEMO", "1")
    assert not llm_demo_wanted()  # fake_llm's base URL is configured
    settings.RB_LLM_BASE_URL, settings.OPENAI_API_KEY = "", "sk-real"
    assert not llm_demo_wanted()
    settings.OPENAI_API_KEY = ""
    assert llm_demo_wanted()
    monkeypatch.delenv("RB_LLM_DEMO")
    assert not llm_demo_wanted(), "the demo is asked for, never assumed"
    # A demo marker left in the environment does not make a real endpoint's verdicts the demo's.
    settings.RB_LLM_BASE_URL = fake_llm.base_url
    monkeypatch.setenv(demo_llm.DEMO_ENDPOINT_ENV, "http://127.0.0.1:9/v1")
    assert not llm_demo_active() and judge_model_for(bank) == "fake-model"
    fake_llm.reply('{"verdict": "success", "rationale": "done"}').reply(
        "# Memory Item 1\n## Title\nT\n## Description\nD\n## Content\nC"
    )
    t = process_trajectory(make_trajectory())
    assert t.judgments.get(source=JudgmentSource.LLM).model == "fake-model"


def test_rb_run_does_not_start_the_demo_when_an_endpoint_is_configured(settings, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("RB_LLM_DEMO", "1")
    settings.RB_LLM_BASE_URL, settings.OPENAI_API_KEY = "http://127.0.0.1:9/v1", ""
    command, env = Command(), {"RB_LLM_BASE_URL": "http://127.0.0.1:9/v1"}
    command.children, command.demo_llm_url = [], ""
    command._demo_llm_start("127.0.0.1", 1, env, tmp_path)
    assert command.children == [] and command.demo_llm_url == ""
    assert env == {"RB_LLM_BASE_URL": "http://127.0.0.1:9/v1"}
    assert "RB_LLM_DEMO is ignored" in capsys.readouterr().out


def test_what_the_demo_made_is_labelled_on_every_page_that_shows_it(
    demo_endpoint, client, owner, bank, make_trajectory
):
    t = process_trajectory(
        make_trajectory(
            task="Buy the cheapest 2 m USB-C cable",
            steps=SUCCESS_STEPS,
            final_answer="Added the 2 m cable for $5.99 to the cart.",
        )
    )
    item = MemoryItem.objects.filter(bank=bank).first()
    ids = {"bank_id": bank.public_id}
    detail = _page(client, owner, reverse("trajectories:detail", kwargs={**ids, "trajectory_id": t.public_id}))
    # One on the judgment, one on each derived item.
    assert detail.count('data-demo-llm title="Made by the demo LLM') == 1 + MemoryItem.objects.filter(bank=bank).count()
    queue = _page(client, owner, reverse("memories:review", kwargs=ids))
    assert queue.count("data-demo-llm") == MemoryItem.objects.filter(bank=bank).count()
    focus = _page(client, owner, reverse("memories:review_focus", kwargs={**ids, "item_id": item.public_id}))
    assert "data-demo-llm" in focus and ">Demo LLM</span>" in focus
    dashboard = _page(client, owner, reverse("trajectories:dashboard", kwargs=ids))
    assert "The <strong>demo LLM</strong> is judging" in dashboard


def test_nothing_is_labelled_demo_when_a_real_endpoint_made_it(fake_llm, client, owner, bank, make_trajectory):
    fake_llm.reply('{"verdict": "success", "rationale": "done"}').reply(
        "# Memory Item 1\n## Title\nT\n## Description\nD\n## Content\nC"
    )
    t = process_trajectory(make_trajectory())
    item = MemoryItem.objects.get(bank=bank)
    ids = {"bank_id": bank.public_id}
    pages = [
        reverse("trajectories:detail", kwargs={**ids, "trajectory_id": t.public_id}),
        reverse("memories:review", kwargs=ids),
        reverse("memories:review_focus", kwargs={**ids, "item_id": item.public_id}),
        reverse("trajectories:dashboard", kwargs=ids),
    ]
    for url in pages:
        assert "data-demo-llm" not in _page(client, owner, url), url
