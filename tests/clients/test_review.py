"""The client's review methods against a live server (a token with the
``review`` scope): the queue, one item, approve / reject / edit, and the
typed errors of each refusal."""

import asyncio
import uuid

import pytest

import reasoningbank_client as rb
from accounts.models import AuditEvent
from memories.items.models import ItemStatus, MemoryItem
from reasoningbank_client import AsyncClient, Client
from tests import factories
from tests.clients.conftest import FAST_RETRY

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reviewer_client(rb_url, bank):
    secret = factories.make_token(bank, scopes=("review",), name="review-tool")
    with Client(rb_url, secret, retry=FAST_RETRY, timeout=60) as c:
        yield c


@pytest.fixture
def proposed(bank):
    trajectory = factories.make_done_trajectory(bank)
    first = factories.propose_item(bank, trajectory, title="Prefer the official source")
    second = factories.propose_item(
        bank, trajectory, title="Retry once after a 503", content="Wait a second and retry.", origin="failure"
    )
    return first, second, trajectory


def test_review_from_the_client(reviewer_client, proposed, bank):
    first, second, trajectory = proposed
    page = reviewer_client.review_queue()
    assert isinstance(page, rb.ReviewPage) and page.count == 2
    assert [i.title for i in page.items] == ["Prefer the official source", "Retry once after a 503"]
    assert reviewer_client.review_queue(origin="failure").items[0].id == str(second.public_id)
    assert reviewer_client.review_queue(limit=1, offset=1).items[0].content == "Wait a second and retry."

    detail = reviewer_client.review_item(str(first.public_id))
    assert isinstance(detail, rb.ReviewItem) and detail.sources == [str(trajectory.public_id)]

    approved = reviewer_client.approve_item(str(first.public_id), seen_version=detail.version)
    assert approved.status == "approved" and approved.approved_at is not None
    assert approved.version == detail.version + 1  # the approval is a new version
    with pytest.raises(rb.ConflictError, match="changed while you were looking"):
        reviewer_client.edit_item(str(first.public_id), title="Stale", seen_version=detail.version)
    with pytest.raises(rb.ValidationError, match="reason"):
        reviewer_client.reject_item(str(second.public_id), reason="  ")
    rejected = reviewer_client.reject_item(str(second.public_id), reason="Too generic.")
    assert (rejected.status, rejected.status_reason) == ("rejected", "Too generic.")
    edited = reviewer_client.edit_item(str(first.public_id), title="Check the official site first", tags=["web"])
    assert (edited.title, edited.tags, edited.status) == ("Check the official site first", ["web"], "approved")

    assert reviewer_client.review_queue().count == 0
    statuses = dict(MemoryItem.objects.filter(bank=bank).values_list("title", "status"))
    assert statuses == {
        "Check the official site first": ItemStatus.APPROVED,
        "Retry once after a 503": ItemStatus.REJECTED,
    }
    actors = set(
        AuditEvent.objects.filter(bank=bank, action__startswith="memory_item.")
        .exclude(action="memory_item.create")
        .values_list("actor_token__name", flat=True)
    )
    assert actors == {"review-tool"}

    with pytest.raises(rb.NotFoundError):
        reviewer_client.approve_item(str(uuid.uuid4()))
    with pytest.raises(rb.ConflictError):
        reviewer_client.reject_item(str(first.public_id), reason="changed my mind")  # approved: archive it instead


def test_an_agent_token_cannot_review(client, proposed):
    with pytest.raises(rb.PermissionError, match="review"):
        client.review_queue()
    with pytest.raises(rb.PermissionError):
        client.approve_item(str(proposed[0].public_id))
    assert MemoryItem.objects.get(pk=proposed[0].pk).status == ItemStatus.PROPOSED


def test_async_review(rb_url, bank, proposed):
    first, second, _ = proposed
    secret = factories.make_token(bank, scopes=("review",))

    async def scenario():
        async with AsyncClient(rb_url, secret, retry=FAST_RETRY, timeout=60) as c:
            page = await c.review_queue(q="official")
            item = await c.review_item(page.items[0].id)
            approved = await c.approve_item(item.id)
            rejected = await c.reject_item(str(second.public_id), "duplicate lesson")
            edited = await c.edit_item(str(second.public_id), content="Wait, then retry once.")
            return page, approved, rejected, edited

    page, approved, rejected, edited = asyncio.run(scenario())
    assert [i.id for i in page.items] == [str(first.public_id)]
    assert (approved.status, rejected.status, edited.status) == ("approved", "rejected", "rejected")
    assert edited.content == "Wait, then retry once."
