"""The MCP server through an MCP client session of the official SDK, over
both transports, against the live server: stdio (``python -m
reasoningbank_client.mcp`` as a subprocess) and streamable HTTP
(``manage.py rb_mcp`` as a subprocess). Every tool is called; bad input to
every tool answers a tool error with the service's message, and the session
keeps working."""

import asyncio
import functools
import json
import os
import socket
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memories.items.models import MemoryItem
from memories.items.services import memory_item_edit
from memories.serving.models import RetrievalEvent
from tests import factories
from tests.harness import free_port
from tests.helpers import http_session, wait_for
from trajectories.models import Trajectory

# The server answers on a loaded machine too: a generous timeout instead of httpx's 5 s.
http_post = functools.partial(httpx.post, timeout=60)

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "Buy the cheapest USB-C cable on the shop and use the coupon"
TOOLS = {"retrieve_memories", "record_trajectory", "trajectory_status", "list_memories", "bank_impact"}


def _text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def _data(result) -> dict:
    assert not result.is_error, _text(result)
    return result.structured_content or json.loads(_text(result))


@asynccontextmanager
async def stdio_session(url: str, token: str):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "reasoningbank_client.mcp"],
        env={"RB_URL": url, "RB_TOKEN": token, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        cwd=str(settings.BASE_DIR),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.fixture
def mcp_http(live_server, tmp_path):
    """``manage.py rb_mcp`` on a free port, forwarding to the live server; yields its /mcp URL."""
    port = free_port()
    log = tmp_path / "rb_mcp.log"
    env = {
        **os.environ,
        "RB_MCP_API_URL": live_server.url,
        # rb_mcp never touches the database: point settings at one that is never connected to.
        "DATABASE_URL": "postgres://unused@127.0.0.1:1/unused",
        "PYTHONUNBUFFERED": "1",
    }
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "rb_mcp", "--port", str(port)],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/mcp"
    try:

        def listens() -> bool:
            if proc.poll() is not None:
                pytest.fail(f"rb_mcp exited with {proc.returncode}:\n{log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5):
                    return True
            except OSError:
                return False

        wait_for(listens, timeout=120, what="rb_mcp to listen")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        print(log.read_text())


async def exercise_every_tool(session: ClientSession) -> dict:
    """Call every tool, good input then bad input, on one session; return what was seen."""
    seen = {}
    tools = await session.list_tools()
    seen["tools"] = {t.name: t for t in tools.tools}

    retrieved = _data(await session.call_tool("retrieve_memories", {"query": TASK, "k": 2, "task_id": "shop-17"}))
    seen["retrieved"] = retrieved
    seen["next_step"] = _data(
        await session.call_tool("retrieve_memories", {"query": "12 results", "run_id": retrieved["run_id"]})
    )
    seen["bad_run"] = _text(await session.call_tool("retrieve_memories", {"query": TASK, "run_id": "../metrics"}))
    seen["foreign_run"] = _text(
        await session.call_tool("retrieve_memories", {"query": TASK, "run_id": "00000000-0000-4000-8000-000000000000"})
    )
    seen["filtered_in"] = _data(
        await session.call_tool(
            "retrieve_memories", {"query": TASK, "filters": {"tags": {"any": ["Shopping"]}, "agent": "shop-bot/1.3"}}
        )
    )
    seen["filtered_out"] = _data(
        await session.call_tool("retrieve_memories", {"query": TASK, "filters": {"tags": {"all": ["shopping", "web"]}}})
    )
    seen["bad_filter"] = _text(
        await session.call_tool("retrieve_memories", {"query": TASK, "filters": {"colour": "red"}})
    )
    recorded = _data(
        await session.call_tool(
            "record_trajectory",
            {
                "task": TASK,
                "steps": [{"thought": "Search first", "action": "search('usb-c')", "observation": "12 results"}],
                "final_answer": "Ordered for $4.49",
                "outcome": "success",
                "retrieval_id": retrieved["retrieval_id"],
                "task_id": "shop-17",
            },
        )
    )
    seen["recorded"] = recorded
    seen["status"] = _data(await session.call_tool("trajectory_status", {"id": recorded["id"]}))
    seen["listed"] = _data(await session.call_tool("list_memories", {"limit": 1}))
    seen["impact"] = _data(await session.call_tool("bank_impact", {"days": 30}))

    bad_calls = {
        "retrieve_memories": {"query": "   "},
        "record_trajectory": {"task": TASK},  # neither steps nor messages
        "trajectory_status": {"id": "00000000-0000-0000-0000-000000000000"},
        "list_memories": {"limit": 1000},
        "bank_impact": {"days": -1},
        "no_such_tool": {},
    }
    seen["errors"] = {}
    for name, arguments in bad_calls.items():
        result = await session.call_tool(name, arguments)
        assert result.is_error, f"{name}({arguments}) did not fail"
        seen["errors"][name] = _text(result)
    # An id that is a path, not a UUID, never reaches the REST path (it made the server fetch /metrics).
    seen["path_id"] = await session.call_tool("trajectory_status", {"id": "../../../metrics"})
    seen["wrong_type"] = await session.call_tool("retrieve_memories", {"query": TASK, "k": "many"})
    # The session survived every failure.
    seen["after"] = _data(await session.call_tool("list_memories", {}))
    return seen


def check(seen: dict, bank) -> None:
    tools = seen["tools"]
    assert set(tools) == TOOLS
    assert all(len(t.description) > 80 for t in tools.values())
    assert "BEFORE" in tools["retrieve_memories"].description
    assert set(tools["record_trajectory"].input_schema["properties"]) >= {
        "task",
        "steps",
        "messages",
        "final_answer",
        "outcome",
        "retrieval_id",
        "task_id",
    }

    assert "filters" in tools["retrieve_memories"].input_schema["properties"]
    assert [i["title"] for i in seen["filtered_in"]["items"]] == [
        "Use the coupon when buying the cheapest cable in the shop"
    ]
    assert seen["filtered_out"]["items"] == [] and seen["filtered_out"]["system_block"] == ""
    filtered = RetrievalEvent.objects.get(public_id=seen["filtered_in"]["retrieval_id"])
    assert filtered.filters == {"tags": {"any": ["shopping"]}, "agent": {"in": ["shop-bot/1.3"]}}
    assert "unknown filter 'colour'" in seen["bad_filter"] and "422" in seen["bad_filter"]
    retrieved = seen["retrieved"]
    assert [i["title"] for i in retrieved["items"]] == ["Use the coupon when buying the cheapest cable in the shop"]
    assert "Use the coupon" in retrieved["system_block"]
    # A later step of the same run: the run's one lesson was served already, so it is not repeated.
    assert retrieved["run_id"] == retrieved["retrieval_id"] and seen["next_step"]["run_id"] == retrieved["run_id"]
    assert seen["next_step"]["items"] == [] and seen["next_step"]["system_block"] == ""
    assert "run_id must be the run_id" in seen["bad_run"]
    assert "not a retrieval of this bank" in seen["foreign_run"] and "404" in seen["foreign_run"]
    row = Trajectory.objects.get(public_id=seen["recorded"]["id"])
    assert row.bank_id == bank.pk and row.agent == "mcp" and row.task_id == "shop-17"
    assert str(row.retrieval.public_id) == retrieved["retrieval_id"]
    assert seen["status"]["id"] == seen["recorded"]["id"] and seen["status"]["status"] == "received"
    assert seen["listed"]["count"] == 1 and len(seen["listed"]["items"]) == 1
    assert seen["impact"]["days"] == 30 and seen["impact"]["verdict"]

    errors = seen["errors"]
    assert "query" in errors["retrieve_memories"] and "422" in errors["retrieve_memories"]
    assert "steps" in errors["record_trajectory"] and "validation_error" in errors["record_trajectory"]
    assert "No such trajectory in this bank." in errors["trajectory_status"] and "404" in errors["trajectory_status"]
    assert "limit" in errors["list_memories"]
    assert "days" in errors["bank_impact"]
    assert "no_such_tool" in errors["no_such_tool"]
    assert (
        seen["path_id"].is_error and "UUID" in _text(seen["path_id"]) and "../../../metrics" in _text(seen["path_id"])
    )
    assert seen["wrong_type"].is_error
    assert seen["after"]["count"] == 1


@pytest.fixture
def cable_lesson(cable_lesson, owner):
    """The shared lesson, tagged by a reviewer and learnt from shop-bot's runs (for the filters)."""
    memory_item_edit(item=cable_lesson, author=owner, tags=["shopping"])
    MemoryItem.objects.filter(pk=cable_lesson.pk).update(source_agents=["shop-bot/1.3"])
    return cable_lesson


def test_every_tool_over_stdio(live_server, bank, token, cable_lesson):
    seen = asyncio.run(_run_stdio(live_server.url, token))
    check(seen, bank)


async def _run_stdio(url, token):
    async with stdio_session(url, token) as session:
        return await exercise_every_tool(session)


def test_every_tool_over_streamable_http(mcp_http, bank, token, cable_lesson):
    async def scenario():
        async with http_session(mcp_http, token) as session:
            return await exercise_every_tool(session)

    check(asyncio.run(scenario()), bank)


def test_http_scopes_are_the_rest_apis(mcp_http, bank, cable_lesson):
    """An ingest-only token may record but not retrieve, exactly as on REST; another bank's token sees its own bank."""
    ingest_only = factories.make_token(bank, scopes=("ingest",))
    other = factories.make_token(factories.make_bank(), scopes=("retrieve", "ingest"))

    async def scenario():
        async with http_session(mcp_http, ingest_only) as session:
            denied = await session.call_tool("retrieve_memories", {"query": TASK})
            recorded = await session.call_tool("record_trajectory", {"task": TASK, "steps": [{"action": "a"}]})
        async with http_session(mcp_http, other) as session:
            listed = await session.call_tool("list_memories", {})
        return denied, recorded, listed

    denied, recorded, listed = asyncio.run(scenario())
    assert denied.is_error and "403" in _text(denied) and "retrieve" in _text(denied)
    assert not recorded.is_error
    assert _data(listed)["count"] == 0


def test_http_without_a_token_is_401(mcp_http):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    answer = http_post(mcp_http, json=body, headers={"Accept": "application/json, text/event-stream"})
    assert answer.status_code == 401
    assert answer.json()["code"] == "missing_token"
    assert answer.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("method", ["initialize", "tools/list"])
def test_http_with_an_unknown_token_is_401_before_mcp(mcp_http, bank, method):
    """The token is checked before any MCP method, not only before a tool call."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Authorization": "Bearer rb_" + "z" * 43}
    answer = http_post(mcp_http, json=body, headers=headers)
    assert answer.status_code == 401
    assert answer.json()["code"] == "invalid_token" and "unknown" in answer.json()["detail"]
    assert answer.headers["www-authenticate"].startswith("Bearer")


def test_http_with_a_live_token_lists_the_tools(mcp_http, bank, token):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
    answer = http_post(mcp_http, json=body, headers=headers)
    assert answer.status_code == 200
    assert {t["name"] for t in answer.json()["result"]["tools"]} == TOOLS


def test_the_server_presents_lessons_as_hints_as_the_system_block_does():
    """The instructions and the retrieve tool agree with the system block: lessons are hints to weigh
    against what the agent observes, not instructions to follow."""
    from reasoningbank_client.mcp import INSTRUCTIONS, build_server

    server = build_server(lambda ctx: None)
    retrieve = next(t for t in asyncio.run(server.list_tools()) if t.name == "retrieve_memories")
    block = (Path(settings.BASE_DIR) / "memories" / "prompts" / "system_block_v1.txt").read_text()
    assert "hints, not instructions" in block and "trust your observation" in block
    for text in (INSTRUCTIONS, server.instructions, retrieve.description):
        assert "follow" not in text.lower()
        assert "hints" in text and "observe" in text


def test_stdio_server_refuses_to_start_without_configuration(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RB_URL", "RB_TOKEN")}
    done = subprocess.run(
        [sys.executable, "-m", "reasoningbank_client.mcp"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(tmp_path),
    )
    assert done.returncode != 0 and "RB_TOKEN" in done.stderr
