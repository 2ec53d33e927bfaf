"""The dataset exports: trajectories as OpenAI chat fine-tuning JSONL and the
human-labelled judge evaluation set, from the Export page (session) and the
export API (token), each file parsed back line by line."""

import json

import pytest
from django.urls import reverse

from tests import factories
from trajectories.judging.models import PromptName
from trajectories.judging.prompt_versions import prompt_of, prompt_version_save
from trajectories.models import JudgmentSource
from trajectories.pipeline.judge import judge_prompt_build
from trajectories.prompts import prompt_load

CHAT_API = "/api/v1/export/chat.jsonl"
EVAL_API = "/api/v1/export/judge-eval.jsonl"


def lines(response) -> list[dict]:
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert response["Content-Disposition"].startswith("attachment;")
    text = b"".join(response.streaming_content).decode()
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def review_auth(bank):
    return {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank, scopes=('review',))}"}


@pytest.fixture
def runs(bank, owner):
    """A success with tool calls (judged by the LLM), a failure, an unjudged run, and a success whose steps were purged."""
    success = factories.make_done_trajectory(bank, verdict="", task="Find the Sunday opening hours of the library.")
    factories.record_verdict(success, "success", prompt_version="judge/v1", model="m1")
    failure = factories.make_done_trajectory(bank, verdict="", task="Book the cheapest train <b>ticket</b>.")
    factories.record_verdict(failure, "failure", source=JudgmentSource.HUMAN, author=owner, rationale="wrong date")
    factories.make_done_trajectory(bank, verdict="", status="received", task="Not judged yet.")
    purged = factories.make_done_trajectory(bank, task="Purged run.")
    factories.purge_raw(purged)
    return success, failure


def test_chat_export_is_openai_chat_format_successes_by_default(client, owner, bank, runs):
    success, _failure = runs
    client.force_login(owner)
    rows = lines(client.get(reverse("trajectories:export_chat", kwargs={"bank_id": bank.public_id})))
    assert len(rows) == 1
    (row,) = rows
    messages = row["messages"]
    # the run's own opening user message; a tool result with no call to answer is an observation
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user", "assistant"]
    assert messages[0]["content"].startswith("You are an agent.")
    assert messages[1]["content"] == "Find the Sunday opening hours of the city library."
    assert messages[4]["content"] == "Observation: HTTP 503 from the catalogue"
    call = messages[2]
    assert call["content"] == "Search the library site."
    assert call["tool_calls"][0]["id"] == "c1" and call["tool_calls"][0]["function"]["name"] == "web_search"
    assert json.loads(call["tool_calls"][0]["function"]["arguments"]) == {"q": "city library hours", "n": 3}
    assert messages[3]["tool_call_id"] == "c1" and messages[3]["content"].startswith("Mon-Sat 9-18")
    assert messages[-1] == {"role": "assistant", "content": "Sundays 12:00-17:00."}
    # every tool message answers a call of the assistant message before it
    called = {c["id"] for c in call["tool_calls"]}
    assert all(m["tool_call_id"] in called for m in messages if m["role"] == "tool")
    assert row["tools"] == [{"type": "function", "function": {"name": "web_search", "parameters": {"type": "object"}}}]
    assert row["metadata"]["trajectory_id"] == str(success.public_id)
    assert row["metadata"]["verdict"] == "success" and row["metadata"]["verdict_source"] == "llm"
    assert row["metadata"]["prompt_version"] == "judge/v1"


def test_chat_export_filters_by_verdict_over_the_api(client, review_auth, runs):
    _success, failure = runs
    failures = lines(client.get(CHAT_API, {"verdict": "failure"}, **review_auth))
    assert [r["metadata"]["trajectory_id"] for r in failures] == [str(failure.public_id)]
    assert failures[0]["metadata"]["verdict_source"] == "human"
    assert failures[0]["metadata"]["agent"] == "web-agent"
    both = lines(client.get(CHAT_API, {"verdict": "all", "metadata": "false"}, **review_auth))
    assert len(both) == 2 and all(set(r) <= {"messages", "tools"} for r in both)
    bad = client.get(CHAT_API, {"verdict": "maybe"}, **review_auth)
    assert bad.status_code == 422 and "verdict" in bad.json()["detail"]


def test_exports_need_the_review_scope_and_stay_in_the_bank(client, auth, review_auth, runs, other_bank, stranger):
    for path in (CHAT_API, EVAL_API):
        response = client.get(path, **auth)  # retrieve + ingest
        assert response.status_code == 403 and response.json()["code"] == "missing_scope"
        assert client.get(path).status_code == 401
    theirs = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(other_bank, scopes=('review',))}"}
    assert lines(client.get(CHAT_API, {"verdict": "all"}, **theirs)) == []
    bank = runs[0].bank
    for name in ("export", "export_chat", "export_judge_eval", "export_reasoning_bank"):
        url = reverse(f"trajectories:{name}", kwargs={"bank_id": bank.public_id})
        assert client.get(url).status_code == 302  # anonymous → login
        client.force_login(stranger)
        assert client.get(url).status_code == 404
        client.logout()


def test_export_page_links_every_dataset_for_a_viewer(client, viewer, bank, runs):
    client.force_login(viewer)
    response = client.get(reverse("trajectories:export", kwargs={"bank_id": bank.public_id}))
    assert response.status_code == 200
    page = response.content.decode()
    for name in ("export_chat", "export_judge_eval", "export_reasoning_bank"):
        assert reverse(f"trajectories:{name}", kwargs={"bank_id": bank.public_id}) in page
    assert 'Successes</a> <span class="muted small">(1)</span>' in page


def test_judge_eval_set_pairs_each_judge_verdict_with_the_humans(client, review_auth, bank, owner, reviewer):
    both = factories.make_done_trajectory(bank, verdict="", task="Rename the <b>report</b> file & send it.")
    factories.record_verdict(both, "success", prompt_version="judge/v1", model="m1", rationale="looks done")
    custom = prompt_version_save(
        bank=bank, name=PromptName.JUDGE, text=prompt_load("judge")[0] + "\nBe strict.", author=owner
    )
    factories.record_verdict(both, "failure", prompt_version=custom.version, model="m2")
    factories.record_verdict(
        both, "failure", source=JudgmentSource.HUMAN, author=reviewer, rationale="file not renamed"
    )
    few_shot = factories.make_done_trajectory(bank, verdict="", task="Few-shot judged.")
    factories.record_verdict(few_shot, "success", prompt_version="judge/v1+fs")
    factories.record_verdict(few_shot, "success", source=JudgmentSource.HUMAN, author=reviewer)
    judge_only = factories.make_done_trajectory(bank, verdict="", task="Only the judge.")
    factories.record_verdict(judge_only, "success", prompt_version="judge/v1")
    human_only = factories.make_done_trajectory(bank, verdict="", task="Only a human.")
    factories.record_verdict(human_only, "success", source=JudgmentSource.HUMAN, author=reviewer)

    rows = lines(client.get(EVAL_API, **review_auth))
    assert [(r["task"], r["prompt_version"], r["judge_verdict"], r["human_verdict"], r["agree"]) for r in rows] == [
        ("Rename the <b>report</b> file & send it.", "judge/v1", "success", "failure", False),
        ("Rename the <b>report</b> file & send it.", custom.version, "failure", "failure", True),
        ("Few-shot judged.", "judge/v1+fs", "success", "success", True),
    ]
    first, second, third = rows
    assert first["human_reason"] == "file not renamed" and first["human"] == reviewer.username
    assert first["judge_rationale"] == "looks done" and first["model"] == "m1"
    both.refresh_from_db()
    expected, _ = judge_prompt_build(
        trajectory=both, prompt=prompt_of(name=PromptName.JUDGE, version=None), few_shot=False
    )
    assert first["judge_input"] == expected and "Rename the <b>report</b> file & send it." in expected  # not escaped
    assert "Be strict." in second["judge_input"] and second["judge_input_note"] == ""
    assert third["judge_input"] is None and "few-shot" in third["judge_input_note"]
    without = lines(client.get(EVAL_API, {"input": "false"}, **review_auth))
    assert len(without) == 3 and "judge_input" not in without[0]
