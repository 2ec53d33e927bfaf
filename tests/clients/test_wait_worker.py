"""``wait()`` against a real Celery worker: the client polls the live server
while the worker moves the trajectory through the pipeline. With an LLM (the
local fake OpenAI server) it ends ``done``; with none it rests in
``awaiting_llm``, which wait() also returns on."""

import pytest

import reasoningbank_client as rb
from tests.fake_llm import FakeLLM
from tests.worker import celery_broker, celery_worker, celery_worker_env, wait_for  # noqa: F401

pytestmark = [
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.parametrize("celery_broker", ["embedded"], indirect=True),  # brokers are tested in test_worker
]

TASK = "Find the opening hours of the city library on Sunday"
STEPS = [
    {"thought": "Look on the library's own site", "action": "open('library.example/hours')"},
    {"observation": "Sunday: 10:00–16:00"},
]
JUDGE_SUCCESS = '{"verdict": "success", "rationale": "The answer quotes the official Sunday hours."}'
ITEMS = """The agent succeeded by reading the official page.

# Memory Item 1
## Title
Read opening hours on the official site
## Description
Use when a task asks when a public institution is open.
## Content
Open the institution's own hours page and quote the entry for the day asked about.
"""


@pytest.fixture
def fake_llm():
    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def celery_worker_env(request):
    if "fake_llm" in request.fixturenames:
        llm = request.getfixturevalue("fake_llm")
        return {"RB_LLM_BASE_URL": llm.base_url, "OPENAI_API_KEY": "", "RB_LLM_MODEL": "fake-model"}
    return {"RB_LLM_BASE_URL": "", "OPENAI_API_KEY": ""}


def test_wait_until_done_with_an_llm(fake_llm, celery_worker, client):
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS)
    recorded = client.record(TASK, steps=STEPS, final_answer="10:00–16:00")
    with pytest.raises(rb.WaitTimeoutError) as e:
        client.wait(recorded.id, timeout=0)  # the answer is not instant…
    assert e.value.trajectory.status in {"received", "judging", "judged", "distilling"}
    done = client.wait(recorded.id, timeout=90, interval=0.2)  # …and then it is
    assert done.status == "done" and done.verdict == "success"
    assert [j.source for j in done.judgments] == ["llm"]
    assert [(i.title, i.status) for i in done.items] == [("Read opening hours on the official site", "proposed")]


def test_wait_returns_on_awaiting_llm_without_one(celery_worker, client, bank):
    bank.trust_agent_outcome = True
    bank.save(update_fields=["trust_agent_outcome"])
    recorded = client.record(TASK, steps=STEPS, outcome="success")
    settled = client.wait(recorded.id, timeout=90, interval=0.2)
    assert settled.status == "awaiting_llm" and settled.verdict == "success"
    assert "No LLM endpoint" in settled.status_detail
    assert [j.source for j in settled.judgments] == ["agent"]  # the trusted signal skipped the judge
