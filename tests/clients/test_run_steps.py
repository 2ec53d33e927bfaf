"""``run.retrieve(observation)`` against the live server: step-level
retrieval in one run, sync and async, linked to the recorded trajectory."""

from __future__ import annotations

import asyncio

import pytest

from memories.serving.models import RetrievalEvent
from reasoningbank_client import AsyncClient
from tests.clients.conftest import FAST_RETRY
from trajectories.models import Trajectory

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "Buy the cheapest USB-C cable on the shop and use the coupon"
LESSONS = [
    ("Use the coupon on the cart page", "Shopping tasks with a coupon", "Apply the code before paying."),
    ("Sort by price first", "When a task asks for the cheapest", "Sort the results ascending by price."),
    ("Check the stock badge", "When a product may be sold out", "Skip items marked out of stock."),
    ("Confirm the order total", "Before answering with a price", "Read the total after the coupon applies."),
]


@pytest.fixture
def lessons(bank, approved):
    bank.min_similarity, bank.top_k = -1.0, 1
    bank.save(update_fields=["min_similarity", "top_k"])
    return [approved(bank, *lesson) for lesson in LESSONS]


def test_run_retrieve_at_each_step_is_one_run_linked_to_the_trajectory(client, bank, lessons):
    with client.run(TASK, agent="shop-bot") as run:
        first = run.retrieval
        second = run.retrieve("12 results, sorted by relevance")
        run.step(action="sort('price')", observation="cheapest $4.99, out of stock")
        third = run.retrieve("the cheapest cable is out of stock")
        again = run.retrieve("the cheapest cable is out of stock", include_served=True, k=4)
        run.outcome = "success"
    assert run.retrievals == [first, second, third, again]
    assert {r.run_id for r in run.retrievals} == {first.retrieval_id}
    served = [i.id for r in (first, second, third) for i in r.items]
    assert len(served) == 3 and len(set(served)) == 3, "no lesson twice in a run"
    assert {i.id for i in again.items} >= set(served), "include_served serves them again"

    row = Trajectory.objects.get(public_id=run.recorded.id)
    assert str(row.retrieval.public_id) == first.retrieval_id  # recorded with the run's first retrieval
    assert client.trajectory(run.recorded.id).retrieval_ids == [r.retrieval_id for r in run.retrievals]
    assert RetrievalEvent.objects.filter(bank=bank, run=row.retrieval).count() == 3


def test_a_run_opened_without_retrieval_starts_at_its_first_step(client, lessons):
    with client.run(TASK, retrieve=False) as run:
        assert run.retrieval is None
        start = run.retrieve("the shop's search page")
        later = run.retrieve("12 results")
        run.step(action="search('usb-c')", observation="12 results")
    assert run.retrieval == start and later.run_id == start.retrieval_id == start.run_id
    assert {i.id for i in start.items}.isdisjoint(i.id for i in later.items)
    assert str(Trajectory.objects.get(public_id=run.recorded.id).retrieval.public_id) == start.retrieval_id


def test_async_run_retrieve(rb_url, token, lessons):
    async def scenario():
        async with AsyncClient(rb_url, token, retry=FAST_RETRY) as client:
            async with client.run(TASK) as run:
                await run.retrieve("12 results")
                run.step(action="buy", observation="ok")
            return run

    run = asyncio.run(scenario())
    assert len(run.retrievals) == 2 and run.retrievals[1].run_id == run.retrieval_id
    assert {i.id for i in run.retrievals[0].items}.isdisjoint(i.id for i in run.retrievals[1].items)
    assert RetrievalEvent.objects.get(public_id=run.retrievals[1].retrieval_id).run.public_id.hex == (
        run.retrieval_id.replace("-", "")
    )
