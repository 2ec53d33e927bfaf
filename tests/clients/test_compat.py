"""The reasoning-bank drop-in: its README's three calls, unchanged but for the
import, against the live server."""

import asyncio
import inspect

import pytest

from reasoningbank_client import ConfigurationError
from reasoningbank_client.compat import ReasoningBank, Turn, matts_run, turns_to_messages
from trajectories.models import Trajectory

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "Buy the cheapest USB-C cable on the shop and use the coupon"

# reasoning-bank 0.1.1's public signatures (read from its source), which the drop-in keeps.
UPSTREAM = {
    "__init__": ["self", "llm", "store", "embedder", "scope", "merge_thresholds", "async_writeback"],
    "retrieve": ["self", "task", "k", "scope", "min_confidence"],
    "ingest_trajectory": ["self", "trajectory", "task", "outcome"],
    "format_as_system_block": ["self", "memories"],
    "schedule_writeback": ["self", "trajectory", "task", "outcome"],
    "list": ["self", "scope"],
    "export": ["self", "path"],
    "add_manual": ["self", "title", "description", "content", "scope"],
    "delete": ["self", "id"],
    "import_": ["self", "path"],
}


def test_signatures_match_reasoning_bank():
    for name, params in UPSTREAM.items():
        ours = list(inspect.signature(getattr(ReasoningBank, name)).parameters)
        assert ours[: len(params)] == params, name


def test_readme_flow(live_server, token, cable_lesson):
    async def llm(prompt, *, system=None):  # reasoning-bank requires one; the service never calls it
        raise AssertionError("not called")

    bank = ReasoningBank(llm=llm, scope="my-project", url=live_server.url, token=token)

    async def flow():
        memories = await bank.retrieve(TASK)
        system_block = bank.format_as_system_block(memories) if memories else None
        answer = "Ordered for $4.49"
        trajectory = [Turn("user", TASK), Turn("assistant", answer)]
        learnt = await bank.ingest_trajectory(trajectory, task=TASK, outcome="success")
        return memories, system_block, learnt

    memories, system_block, learnt = asyncio.run(flow())
    assert [m.title for m in memories] == ["Use the coupon when buying the cheapest cable in the shop"]
    assert memories[0].id == str(cable_lesson.public_id) and memories[0].scope == "my-project"
    assert "Use the coupon" in system_block
    assert learnt == []  # the service distills later, and a reviewer approves
    row = Trajectory.objects.get()
    assert (row.task, row.final_answer, row.outcome) == (TASK, "Ordered for $4.49", "success")
    assert row.retrieval is not None and row.metadata == {"scope": "my-project"}
    # The local rendering, for memories that are not exactly one retrieval's answer.
    assert bank.format_as_system_block(memories[:0]) == ""
    local = bank.format_as_system_block([*memories, *memories])
    assert local.startswith("# Reasoning bank — lessons from prior trajectories")

    listed = asyncio.run(bank.list())
    assert [m.id for m in listed] == [memories[0].id]
    with pytest.raises(NotImplementedError, match="reviewers"):
        asyncio.run(bank.add_manual("t", "d", "c"))


def test_schedule_writeback_and_matts(live_server, token):
    bank = ReasoningBank(url=live_server.url, token=token)
    tool_turns = [
        Turn("user", "weather?"),
        Turn("assistant", "", {"tool_calls": [{"id": "c1", "name": "weather", "arguments": {"city": "Paris"}}]}),
        Turn("tool", "18°C", {"tool_call_id": "c1"}),
        {"role": "assistant", "content": "18°C"},
    ]
    assert bank.schedule_writeback(tool_turns, "weather?") == []  # synchronous, like reasoning-bank's default

    async def rollout():
        return [Turn("user", "weather?"), Turn("assistant", "18°C")]

    trajectories, memories = asyncio.run(matts_run(rollout, task="weather?", bank=bank, k=3))
    assert len(trajectories) == 3 and memories == []
    groups = set(Trajectory.objects.exclude(group_id="").values_list("group_id", "group_size"))
    assert len(groups) == 1 and next(iter(groups))[1] == 3
    single = Trajectory.objects.get(group_id="")
    assert [s["kind"] for s in single.steps] == ["user", "tool_call", "tool_result", "action"]


def test_turns_keep_tool_calls_and_results():
    messages = turns_to_messages(
        [
            Turn("assistant", "calling", {"tool_calls": [{"name": "f", "arguments": '{"a": 1}', "id": "x"}]}),
            Turn("user", "", {"tool_results": [{"id": "x", "content": "boom", "is_error": True}]}),
        ]
    )
    assert messages == [
        {
            "role": "assistant",
            "content": "calling",
            "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
        },
        {"role": "tool", "content": "Error: boom", "tool_call_id": "x"},
    ]


def test_needs_a_service(monkeypatch):
    monkeypatch.delenv("RB_URL", raising=False)
    monkeypatch.delenv("RB_TOKEN", raising=False)
    with pytest.raises(ConfigurationError):
        ReasoningBank(llm=None)
