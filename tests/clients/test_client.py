"""The Python client against a live server: every method, run(), idempotent
retries of record, and a typed error for each error status."""

import asyncio
import uuid

import httpx
import pytest

import reasoningbank_client as rb
from accounts.teams.banks import bank_update_settings
from memories.items.services import memory_item_edit
from reasoningbank_client import AsyncClient, Client
from tests import factories
from tests.clients.conftest import FAST_RETRY
from trajectories.models import Trajectory

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "Buy the cheapest USB-C cable on the shop and use the coupon"
STEPS = [
    {"thought": "Search first", "action": 'search("usb-c cable")', "observation": "12 results"},
    {"tool": "sort", "arguments": {"by": "price"}, "observation": "cheapest: $4.99"},
]


def test_configuration_by_environment(monkeypatch, rb_url, token):
    monkeypatch.setenv("RB_URL", rb_url + "/api/v1/")
    monkeypatch.setenv("RB_TOKEN", token)
    with Client() as client:
        assert client.base_url == rb_url + "/api/v1/"
        assert client.token().bank == "web-agents"
    monkeypatch.delenv("RB_TOKEN")
    with pytest.raises(rb.ConfigurationError, match="RB_TOKEN"):
        Client()


def test_token_describes_the_bank(client, bank):
    info = client.token()
    assert isinstance(info, rb.TokenInfo)
    assert (info.bank, info.team, info.bank_id) == ("web-agents", "acme", str(bank.public_id))
    assert sorted(info.scopes) == ["ingest", "retrieve"]
    assert info.rate_limit_per_minute > 0


def test_retrieve_returns_items_block_and_id(client, cable_lesson):
    result = client.retrieve(TASK, k=3, task_id="shop-17")
    assert isinstance(result, rb.Retrieval)
    assert [item.title for item in result.items] == ["Use the coupon when buying the cheapest cable in the shop"]
    assert result.items[0].id == str(cable_lesson.public_id)
    assert 0 < result.items[0].score <= 1
    served = result.items[0]  # why it was served: with no outcome data the score is its similarity
    assert (served.similarity, served.utility, served.n) == (served.score, 0.0, 0)
    assert "Use the coupon when buying the cheapest cable in the shop" in result.system_block
    uuid.UUID(result.retrieval_id)
    assert result.warnings == []
    assert result.release == 1  # the bank's first release: the lesson's approval published it


def test_retrieve_with_filters_is_scoped_and_a_bad_filter_raises(client, cable_lesson, owner):
    memory_item_edit(item=cable_lesson, author=owner, tags=["shopping"])
    assert [i.title for i in client.retrieve(TASK, filters={"tags": {"any": ["shopping"]}}).items] == [
        cable_lesson.title
    ]
    assert client.retrieve(TASK, filters={"tags": {"any": ["travel"]}}).items == []
    assert client.retrieve(TASK, filters={"agent": {"in": ["shop-bot"]}}).items == []  # written by hand: no agent
    with pytest.raises(rb.ValidationError, match="unknown filter 'tag'"):
        client.retrieve(TASK, filters={"tag": "shopping"})


def test_retrieve_on_an_empty_bank_warns(client):
    result = client.retrieve(TASK)
    assert result.items == [] and result.system_block == ""
    assert result.warnings == ["This bank has no approved memories yet."]


def test_record_steps_then_read_it_back(client, bank):
    bank.trust_agent_outcome = True
    bank.save(update_fields=["trust_agent_outcome"])
    retrieval = client.retrieve(TASK)
    recorded = client.record(
        TASK,
        steps=STEPS,
        final_answer="Ordered for $4.49 with coupon SAVE10",
        outcome="success",
        retrieval_id=retrieval.retrieval_id,
        task_id="shop-17",
        agent="shop-bot/1.3",
        metadata={"run": 7},
    )
    assert isinstance(recorded, rb.Recorded)
    assert recorded.status == "received" and recorded.duplicate is False
    assert recorded.url.endswith(recorded.id)
    uuid.UUID(recorded.external_id)  # generated, since none was given

    row = Trajectory.objects.get(public_id=recorded.id)
    assert (row.bank_id, row.task_id, row.agent, row.metadata) == (bank.pk, "shop-17", "shop-bot/1.3", {"run": 7})
    assert row.external_id == recorded.external_id
    assert str(row.retrieval.public_id) == retrieval.retrieval_id
    assert row.verdict == "success"  # the agent's outcome, trusted by default

    status = client.trajectory(recorded.id)
    assert isinstance(status, rb.Trajectory)
    assert (status.id, status.external_id, status.step_count) == (recorded.id, recorded.external_id, row.step_count)
    assert status.verdict == "success"
    assert [j.source for j in status.judgments] == ["agent"]


def test_record_with_an_external_id_twice_is_one_trajectory(client):
    first = client.record(TASK, steps=STEPS, external_id="run-0042")
    again = client.record(TASK, steps=STEPS, external_id="run-0042")
    assert (again.id, again.duplicate, first.duplicate) == (first.id, True, False)
    assert Trajectory.objects.filter(external_id="run-0042").count() == 1


class LoseFirstAnswer(httpx.HTTPTransport):
    """Sends each request to the real server, but drops the answer to the first
    POST /trajectories as if the connection broke after the server stored it."""

    def __init__(self):
        super().__init__()
        self.posts = 0

    def handle_request(self, request):
        response = super().handle_request(request)
        if request.method == "POST" and request.url.path.endswith("/trajectories"):
            self.posts += 1
            if self.posts == 1:
                response.read()
                response.close()
                raise httpx.ReadError("connection reset after the request was sent", request=request)
        return response


def test_a_retried_record_never_makes_a_second_trajectory(rb_url, token):
    transport = LoseFirstAnswer()
    with Client(rb_url, token, retry=FAST_RETRY, transport=transport) as client:
        recorded = client.record(TASK, steps=STEPS)  # no external_id: the client made one
    assert transport.posts == 2
    assert recorded.duplicate is True  # the retry found the trajectory the lost answer had created
    assert Trajectory.objects.filter(task=TASK).count() == 1
    assert Trajectory.objects.get().external_id == recorded.external_id


def test_record_messages_and_batch(client):
    messages = [
        {"role": "user", "content": "What's the weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "18°C, cloudy"},
        {"role": "assistant", "content": "18°C and cloudy."},
    ]
    one = client.record("Weather in Paris", messages=messages)
    assert Trajectory.objects.get(public_id=one.id).input_format == "openai"

    batch = client.record_batch(
        [
            {"task": "first", "steps": STEPS, "outcome": "failure"},
            {"task": "second", "steps": [{"unknown": 1}]},
            {"task": "third", "messages": messages, "external_id": "mine-3"},
        ]
    )
    assert isinstance(batch, rb.BatchResult)
    assert (batch.accepted, batch.failed) == (2, 1)
    ok, bad, third = batch.results
    assert ok.ok and ok.id and ok.external_id and ok.duplicate is False
    assert not bad.ok and bad.error["code"] == "validation_error" and "unknown keys" in bad.error["detail"]
    assert third.external_id == "mine-3"
    assert Trajectory.objects.filter(external_id=ok.external_id, task="first").exists()


def test_memories_iterates_every_page(client, bank, approved):
    bank_update_settings(
        bank=bank, actor=None, duplicate_threshold=1.0
    )  # near-identical lessons, kept apart on purpose
    bank.refresh_from_db()
    made = [approved(bank, f"Lesson {i}", "When it applies", f"Do thing {i}") for i in range(5)]
    seen = list(client.memories(page_size=2))  # three requests
    assert sorted(m.id for m in seen) == sorted(str(m.public_id) for m in made)
    assert all(isinstance(m, rb.MemoryItem) and m.approved_at for m in seen)
    page = client.memories_page(limit=2, offset=4)
    assert page.count == 5 and len(page.items) == 1
    assert client.memory(seen[0].id).title == seen[0].title


def test_impact(client):
    report = client.impact(days=30)
    assert isinstance(report, rb.Impact)
    assert report.days == 30
    assert report.verdict in {"no_holdout", "not_enough_data", "helps", "hurts", "no_difference"}
    assert report.treatment.arm == "treatment" and report.holdout.arm == "holdout"
    assert report.items_pending is False and report.raw["items_pending"] is False  # a small bank's: computed
    assert client.impact().days is None


def test_run_records_a_success_with_its_retrieval(client, cable_lesson):
    with client.run(TASK, task_id="shop-17", agent="shop-bot") as run:
        assert "Use the coupon" in run.system_block
        assert [i.title for i in run.items] == ["Use the coupon when buying the cheapest cable in the shop"]
        run.step(thought="Search first", action="search('usb-c')", observation="12 results")
        run.step(tool="apply_coupon", arguments={"code": "SAVE10"}, observation="total $4.49")
        run.final_answer = "Ordered for $4.49"
        run.outcome = "success"
    assert run.recorded and run.recorded.duplicate is False
    row = Trajectory.objects.get(public_id=run.recorded.id)
    assert str(row.retrieval.public_id) == run.retrieval_id
    assert (row.outcome, row.final_answer, row.task_id, row.agent) == (
        "success",
        "Ordered for $4.49",
        "shop-17",
        "shop-bot",
    )
    assert [s["kind"] for s in row.steps][:3] == ["thought", "action", "observation"]


def test_run_records_a_failure_when_the_block_raises(client):
    with pytest.raises(RuntimeError, match="checkout page timed out"), client.run(TASK) as run:
        run.step(action="open('/cart')", observation="cart with 1 item")
        raise RuntimeError("checkout page timed out")
    row = Trajectory.objects.get(public_id=run.recorded.id)
    assert row.outcome == "failure"
    assert row.steps[-1]["kind"] == "observation" and row.steps[-1]["is_error"] is True
    assert "RuntimeError: checkout page timed out" in row.steps[-1]["content"]
    assert row.metadata["error"] == "RuntimeError: checkout page timed out"


def test_run_with_messages_and_no_outcome(client):
    with client.run("Say hi", retrieve=False) as run:
        assert run.system_block == "" and run.retrieval_id is None
        run.messages = [{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "Hi!"}]
    row = Trajectory.objects.get(public_id=run.recorded.id)
    assert row.outcome == "" and row.input_format == "openai" and row.retrieval is None


# --- errors ----------------------------------------------------------------------------------


def test_401_unknown_token(rb_url):
    with Client(rb_url, "rb_" + "x" * 43, retry=FAST_RETRY) as client, pytest.raises(rb.AuthenticationError) as e:
        client.token()
    assert e.value.status == 401 and e.value.code and e.value.detail


def test_403_missing_scope(rb_url, bank):
    secret = factories.make_token(bank, scopes=("ingest",))
    with Client(rb_url, secret, retry=FAST_RETRY) as client, pytest.raises(rb.PermissionError) as e:
        client.retrieve(TASK)
    assert e.value.status == 403 and "retrieve" in e.value.detail


def test_404_another_banks_trajectory(client, rb_url, other_bank):
    with Client(rb_url, factories.make_token(other_bank), retry=FAST_RETRY) as theirs:
        their_id = theirs.record(TASK, steps=STEPS).id
    with pytest.raises(rb.NotFoundError) as e:
        client.trajectory(their_id)
    assert (e.value.status, e.value.code) == (404, "not_found")
    with pytest.raises(rb.NotFoundError):
        client.memory(str(uuid.uuid4()))


class RecordingTransport(httpx.HTTPTransport):
    """The real transport, keeping the raw path of every request it sends."""

    def __init__(self):
        super().__init__()
        self.paths: list[bytes] = []

    def handle_request(self, request):
        self.paths.append(request.url.raw_path)
        return super().handle_request(request)


@pytest.mark.parametrize("bad_id", ["../../../metrics", "..", "a/b?c#d"])
def test_an_id_stays_one_segment_of_its_path(rb_url, bank, bad_id):
    """An id is percent-encoded into its own path segment: ``../../../metrics`` must not
    reach /metrics (nor ``..`` the API root)."""
    transport = RecordingTransport()
    secret = factories.make_token(bank, scopes=("retrieve", "ingest", "review"))
    with Client(rb_url, secret, retry=FAST_RETRY, transport=transport) as client:
        for call in (client.trajectory, client.memory, client.review_item):
            with pytest.raises(rb.APIError) as e:
                call(bad_id)
            assert e.value.status in (404, 422), e.value
    prefixes = (b"/api/v1/trajectories/", b"/api/v1/memories/", b"/api/v1/review/items/")
    for path, prefix in zip(transport.paths, prefixes, strict=True):
        segment = path.removeprefix(prefix)
        assert path.startswith(prefix) and b"/" not in segment and segment not in (b".", b".."), path


def test_422_names_the_field(client):
    with pytest.raises(rb.ValidationError) as e:
        client.record(TASK, steps=STEPS, outcome="maybe")
    assert e.value.status == 422 and e.value.code == "validation_error"
    assert "outcome" in e.value.detail
    assert any("outcome" in err["loc"] for err in e.value.errors)
    with pytest.raises(rb.ValidationError, match="steps"):
        client.record(TASK)  # neither steps nor messages
    with pytest.raises(rb.ValidationError):
        client.retrieve("   ")


def test_413_too_many_steps(client, settings):
    settings.RB_MAX_STEPS = 3
    with pytest.raises(rb.PayloadTooLargeError) as e:
        client.record(TASK, steps=[{"action": f"step {i}"} for i in range(10)])
    assert e.value.status == 413 and e.value.detail


def test_connection_error_after_retries():
    with Client("http://127.0.0.1:9", "rb_x", retry=FAST_RETRY) as client, pytest.raises(rb.ConnectionError):
        client.token()


# --- async ------------------------------------------------------------------------------------


def test_async_client_and_run(rb_url, token, cable_lesson):
    async def scenario():
        async with AsyncClient(rb_url, token, retry=FAST_RETRY) as client:
            info = await client.token()
            result = await client.retrieve(TASK)
            titles = [m.title async for m in client.memories(page_size=1)]
            async with client.run(TASK, task_id="a-1") as run:
                assert run.system_block == result.system_block
                run.step(action="buy", observation="ok")
                run.outcome = "success"
            with pytest.raises(ValueError):
                async with client.run(TASK) as failed:
                    failed.step(thought="try")
                    raise ValueError("no stock")
            status = await client.trajectory(run.recorded.id)
            with pytest.raises(rb.NotFoundError):
                await client.trajectory(str(uuid.uuid4()))
            batch = await client.record_batch([{"task": "b", "steps": STEPS}])
            impact = await client.impact()
            return info, titles, run, failed, status, batch, impact

    info, titles, run, failed, status, batch, impact = asyncio.run(scenario())
    assert info.bank == "web-agents" and titles == ["Use the coupon when buying the cheapest cable in the shop"]
    assert status.status == "received" and status.id == run.recorded.id
    assert Trajectory.objects.get(public_id=failed.recorded.id).outcome == "failure"
    assert batch.accepted == 1 and impact.verdict
