"""record(messages=...) takes what agent frameworks produce: an OpenAI Agents
SDK run result and LangChain messages. The objects are made by the real
libraries (the Agents SDK runs a real agent loop against a scripted model and
a real function tool; LangChain's own tool produces the ToolMessage), then
sent to the live server, which must keep every thought, tool call with its
arguments, observation and the final answer."""

import asyncio
import json

import pytest

from reasoningbank_client.adapters import to_messages
from trajectories.models import Trajectory

# --- OpenAI Agents SDK ------------------------------------------------------------------------


def _agents_run_result():
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
        ResponseReasoningItem,
    )
    from openai.types.responses.response_reasoning_item import Summary

    set_tracing_disabled(True)

    @function_tool
    def get_weather(city: str) -> str:
        """The weather of a city."""
        return f"18°C, cloudy in {city}"

    class ScriptedModel(Model):
        """Stands in for the LLM only: the SDK's own loop calls the tool and builds the items."""

        def __init__(self):
            self.turns = 0

        async def get_response(self, *args, **kwargs):
            self.turns += 1
            if self.turns == 1:
                output = [
                    ResponseReasoningItem(
                        id="rs_1",
                        type="reasoning",
                        summary=[Summary(type="summary_text", text="I should call the weather tool.")],
                    ),
                    ResponseFunctionToolCall(
                        id="fc_1",
                        call_id="call_1",
                        type="function_call",
                        name="get_weather",
                        arguments='{"city": "Paris"}',
                        status="completed",
                    ),
                ]
            else:
                text = ResponseOutputText(type="output_text", text="18°C and cloudy.", annotations=[])
                output = [
                    ResponseOutputMessage(
                        id="msg_1", type="message", role="assistant", status="completed", content=[text]
                    )
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    agent = Agent(name="weather", instructions="Answer weather questions.", tools=[get_weather], model=ScriptedModel())
    return asyncio.run(Runner.run(agent, "What's the weather in Paris?"))


def test_agents_sdk_result_becomes_chat_messages():
    result = _agents_run_result()
    messages, final = to_messages(result)
    assert final == "18°C and cloudy."
    assert messages == [
        {"role": "user", "content": "What's the weather in Paris?"},
        {
            "role": "assistant",
            "reasoning_content": "I should call the weather tool.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18°C, cloudy in Paris"},
        {"role": "assistant", "content": "18°C and cloudy."},
    ]


@pytest.mark.django_db(transaction=True)
def test_agents_sdk_result_recorded_on_the_live_server(client):
    result = _agents_run_result()
    recorded = client.record("What's the weather in Paris?", messages=result)
    row = Trajectory.objects.get(public_id=recorded.id)
    assert row.input_format == "openai"
    assert row.final_answer == "18°C and cloudy."
    kinds = [(s["kind"], s.get("name"), s["content"]) for s in row.steps]
    assert ("thought", None, "I should call the weather tool.") in kinds
    call = next(s for s in row.steps if s["kind"] == "tool_call")
    assert (call["name"], json.loads(call["arguments"])) == ("get_weather", {"city": "Paris"})
    assert ("tool_result", "get_weather", "18°C, cloudy in Paris") in kinds


def test_built_in_tool_items_are_kept_as_tool_calls():
    items = [
        {"role": "user", "content": "Find the docs"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "mcp sdk docs"}},
        {"type": "code_interpreter_call", "id": "ci_1", "code": "print(1)", "outputs": [{"type": "logs", "logs": "1"}]},
        {"type": "something_new", "id": "x_1", "detail": 42},
    ]
    messages, _ = to_messages(items)
    calls = [c for m in messages for c in m.get("tool_calls", [])]
    assert [c["function"]["name"] for c in calls] == ["web_search", "code_interpreter", "something_new"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"action": {"query": "mcp sdk docs"}}
    assert {"role": "tool", "tool_call_id": "ci_1", "content": "[logs]"} in messages


# --- LangChain ------------------------------------------------------------------------------


def _langchain_messages():
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """The weather of a city."""
        return f"18°C, cloudy in {city}"

    call = {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_9", "type": "tool_call"}
    ai_call = AIMessage(
        content="Let me check the weather.",
        tool_calls=[call],
        additional_kwargs={"reasoning_content": "The user wants Paris."},
    )
    tool_message = get_weather.invoke(call)  # LangChain builds the ToolMessage itself
    return [
        SystemMessage("You answer weather questions."),
        HumanMessage("What's the weather in Paris?"),
        ai_call,
        tool_message,
        AIMessage("18°C and cloudy."),
    ]


def test_langchain_messages_become_chat_messages():
    from langchain_core.messages import ToolMessage, messages_to_dict

    lc = _langchain_messages()
    assert isinstance(lc[3], ToolMessage)
    messages, final = to_messages(lc)
    assert final == "18°C and cloudy."
    assert messages[:2] == [
        {"role": "system", "content": "You answer weather questions."},
        {"role": "user", "content": "What's the weather in Paris?"},
    ]
    assert messages[2] == {
        "role": "assistant",
        "content": "Let me check the weather.",
        "reasoning_content": "The user wants Paris.",
        "tool_calls": [
            {"id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    }
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": "call_9",
        "content": "18°C, cloudy in Paris",
        "name": "get_weather",
    }
    # The serialized forms read the same: messages_to_dict() and model_dump().
    assert to_messages(messages_to_dict(lc)) == (messages, final)
    assert to_messages([m.model_dump() for m in lc]) == (messages, final)


@pytest.mark.django_db(transaction=True)
def test_langchain_messages_recorded_on_the_live_server(client):
    recorded = client.record("What's the weather in Paris?", messages=_langchain_messages(), outcome="success")
    row = Trajectory.objects.get(public_id=recorded.id)
    assert row.final_answer == "18°C and cloudy."
    kinds = [s["kind"] for s in row.steps]
    assert kinds == ["system", "user", "thought", "thought", "tool_call", "tool_result", "action"]
    assert row.steps[2]["content"] == "The user wants Paris."
    assert json.loads(row.steps[4]["arguments"]) == {"city": "Paris"}


def test_plain_chat_messages_pass_through_unchanged():
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert to_messages(messages) == (messages, None)
    with pytest.raises(TypeError):
        to_messages("not a list")
