"""Scoped retrieval: item tags (the one rule, edits in the
history and audit, export/import), and `filters` on POST /api/v1/retrieve —
tags any/all, the source trajectories' agent and metadata — applied inside the
vector search, so a selective filter still gets k items."""

import json

import numpy as np
import pytest
from django.db import connection

from accounts.models import AuditEvent, RetrievalMode
from memories.embedding.model import embed_text
from memories.items.experiences import experience_create
from memories.items.export import memory_items_export
from memories.items.imports import memory_items_import
from memories.items.models import TAGS_MAX, ItemStatus, MemoryItem, normalize_tags
from memories.items.services import memory_item_create, memory_item_edit, memory_item_propose
from memories.review.decisions import memory_item_approve
from memories.review.selectors import item_history
from memories.serving import RetrievalFilters
from memories.serving.models import RetrievalEvent
from memories.serving.retrieval import retrieval_perform
from reasoningbank_site.errors import Invalid
from tests import factories

RETRIEVE = "/api/v1/retrieve"
QUERY = "Buy the cheapest USB-C cable in the shop and apply the coupon"


def post(client, body, auth):
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(RETRIEVE, data=data, content_type="application/json", **auth)


def served(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["title"] for item in response.json()["items"]]


def lesson(bank, owner, title, *, tags=(), agents=(), metadata=(), content="Sort by price, then apply the coupon."):
    """An approved distilled item with reviewers' tags and its trajectories' agents/metadata."""
    item = memory_item_propose(
        bank=bank,
        title=title,
        description="Shopping with a coupon.",
        content=content,
        origin="success",
        source_agents=agents,
        source_metadata=metadata,
    )
    if tags:
        memory_item_edit(item=item, author=owner, tags=tags)
    return memory_item_approve(item=item, author=owner)


@pytest.fixture
def shop(bank, owner):
    bank.min_similarity = -1.0
    bank.top_k = 10
    bank.save(update_fields=["min_similarity", "top_k"])
    return {
        "cart": lesson(
            bank,
            owner,
            "Apply coupons on the cart page",
            tags=["checkout", "coupons"],
            agents=["shop-bot/1.3"],
            metadata=[{"env": "prod", "site": {"name": "shop", "region": "eu"}}],
        ),
        "sort": lesson(
            bank,
            owner,
            "Sort listings by price first",
            tags=["search"],
            agents=["shop-bot/1.4"],
            metadata=[{"env": "prod", "site": {"name": "shop", "region": "us"}}],
        ),
        "login": lesson(
            bank,
            owner,
            "Sign in before checking out",
            tags=["checkout", "auth"],
            agents=["shop-bot/1.3", "web-bot"],
            metadata=[{"env": "dev"}, {"env": "staging"}],
        ),
        "manual": memory_item_create(
            bank=bank,
            title="Prefer the shop's own coupon field",
            description="Coupons.",
            content="Type the coupon into the shop's field.",
            author=owner,
            status=ItemStatus.APPROVED,
            tags=["coupons"],
        ),
    }


# --- the tag rule ----------------------------------------------------------------------------


def test_tags_are_normalized_once_for_every_writer():
    assert normalize_tags(["Checkout", " checkout ", "Two Words", "", "v1.2_x"]) == ["checkout", "two-words", "v1.2_x"]
    assert normalize_tags("web, Auth  shop") == ["auth", "shop", "web"]
    for bad in (["bad/tag"], ["-leading"], ["x" * 41], [7], "é"):
        with pytest.raises(ValueError):
            normalize_tags(bad)
    with pytest.raises(ValueError, match=f"at most {TAGS_MAX} tags"):
        normalize_tags([f"t{i}" for i in range(TAGS_MAX + 1)])


def test_tag_edit_is_versioned_audited_and_keeps_the_item_searchable(bank, owner):
    item = memory_item_create(
        bank=bank, title="Read the error banner", description="d", content="c", author=owner, status="approved"
    )
    embedding_hash = item.embedding_hash
    memory_item_edit(item=item, author=owner, tags=["Forms", "errors"], note="scope it")
    item.refresh_from_db()
    assert item.tags == ["errors", "forms"]
    assert item.embedding_hash == embedding_hash and item.embedding is not None  # tags are not embedded text
    assert item.status == ItemStatus.APPROVED
    history = item_history(item=item)
    assert history[0].version.action == "edited" and history[0].version.tags == ["errors", "forms"]
    assert history[0].changes == [("tags", [("+", "errors"), ("+", "forms")])]
    event = AuditEvent.objects.filter(action="memory_item.edit").latest("id")
    assert (event.before["tags"], event.after["tags"]) == ([], ["errors", "forms"])

    memory_item_edit(item=item, author=owner, tags="forms")
    assert item_history(item=item)[0].changes == [("tags", [("-", "errors")])]
    versions = item.versions.count()
    memory_item_edit(item=item, author=owner, tags=["FORMS"])  # same tags: nothing written
    assert item.versions.count() == versions
    with pytest.raises(Invalid, match="Tags: tag 'no/slash'"):
        memory_item_edit(item=item, author=owner, tags=["no/slash"])


def test_tags_travel_with_export_and_import(bank, other_bank, owner):
    memory_item_create(bank=bank, title="Tagged", description="d", content="c", author=owner, tags=["web", "auth"])
    rows = list(memory_items_export(bank=bank))
    assert rows[0]["tags"] == ["auth", "web"]
    report = memory_items_import(bank=other_bank, author=owner, records=rows)
    assert not report.errors
    assert MemoryItem.objects.get(bank=other_bank).tags == ["auth", "web"]
    bad = memory_items_import(
        bank=other_bank, author=owner, records=[{"title": "t", "description": "d", "content": "c", "tags": ["a b/c"]}]
    )
    assert bad.errors == [
        "record 1: tag 'a-b/c' may only hold letters, digits, '.', '_' and '-', starting with a letter or digit"
    ]


# --- filters on the API ----------------------------------------------------------------------


def test_filter_by_tags_any_and_all(client, auth, shop):
    assert sorted(served(post(client, {"query": QUERY, "filters": {"tags": {"any": ["Checkout"]}}}, auth))) == [
        "Apply coupons on the cart page",
        "Sign in before checking out",
    ]
    both = {"query": QUERY, "filters": {"tags": {"all": ["checkout", "coupons"]}}}
    assert served(post(client, both, auth)) == ["Apply coupons on the cart page"]
    mixed = {"query": QUERY, "filters": {"tags": {"any": ["search", "auth"], "all": ["checkout"]}}}
    assert served(post(client, mixed, auth)) == ["Sign in before checking out"]
    assert served(post(client, {"query": QUERY, "filters": {"tags": {"any": ["nothing-has-it"]}}}, auth)) == []


def test_filter_by_agent_and_metadata(client, auth, shop):
    one = {"query": QUERY, "filters": {"agent": "shop-bot/1.3"}}
    assert sorted(served(post(client, one, auth))) == ["Apply coupons on the cart page", "Sign in before checking out"]
    several = {"query": QUERY, "filters": {"agent": {"in": ["shop-bot/1.4", "web-bot"]}}}
    assert sorted(served(post(client, several, auth))) == [
        "Sign in before checking out",
        "Sort listings by price first",
    ]
    # JSON containment: nested objects match partially; any one source trajectory's metadata may match.
    eu = {"query": QUERY, "filters": {"metadata": {"env": "prod", "site": {"region": "eu"}}}}
    assert served(post(client, eu, auth)) == ["Apply coupons on the cart page"]
    staging = {"query": QUERY, "filters": {"metadata": {"env": "staging"}}}
    assert served(post(client, staging, auth)) == ["Sign in before checking out"]
    combined = {
        "query": QUERY,
        "filters": {"agent": "shop-bot/1.3", "metadata": {"env": "prod"}, "tags": {"any": ["checkout"]}},
    }
    assert served(post(client, combined, auth)) == ["Apply coupons on the cart page"]
    # Hand-written items have no source trajectory: an agent filter leaves them out, a tag filter does not.
    assert "Prefer the shop's own coupon field" not in served(
        post(client, {"query": QUERY, "filters": {"agent": "x"}}, auth)
    )
    assert "Prefer the shop's own coupon field" in served(
        post(client, {"query": QUERY, "filters": {"tags": {"any": ["coupons"]}}}, auth)
    )


def test_retrieval_event_records_the_filters(client, auth, shop):
    body = {
        "query": QUERY,
        "filters": {"tags": {"any": ["CHECKOUT"]}, "agent": "shop-bot/1.3", "metadata": {"env": "prod"}},
    }
    response = post(client, body, auth)
    event = RetrievalEvent.objects.get(public_id=response.json()["retrieval_id"])
    assert event.filters == {
        "tags": {"any": ["checkout"]},
        "agent": {"in": ["shop-bot/1.3"]},
        "metadata": {"env": "prod"},
    }
    assert [entry["id"] for entry in event.results] == [str(shop["cart"].public_id)]
    unfiltered = post(client, {"query": QUERY}, auth)
    assert RetrievalEvent.objects.get(public_id=unfiltered.json()["retrieval_id"]).filters == {}


def test_another_banks_items_never_leak_through_filters(client, auth, bank, other_bank, owner, shop):
    other_bank.min_similarity = -1.0
    other_bank.save(update_fields=["min_similarity"])
    theirs = lesson(
        other_bank, owner, "Their coupon lesson", tags=["checkout"], agents=["shop-bot/1.3"], metadata=[{"env": "prod"}]
    )
    other_auth = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(other_bank)}"}
    for filters in ({"tags": {"any": ["checkout"]}}, {"agent": "shop-bot/1.3"}, {"metadata": {"env": "prod"}}):
        ours = served(post(client, {"query": QUERY, "filters": filters}, auth))
        assert ours and theirs.title not in ours
        assert served(post(client, {"query": QUERY, "filters": filters}, other_auth)) == [theirs.title]


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"colour": "red"}, "unknown filter 'colour'; use tags or agent or metadata"),
        ({"tags": ["checkout"]}, "filters.tags"),
        ({"tags": {}}, "give a non-empty 'any' or 'all' list of tags"),
        ({"tags": {"any": []}}, "give a non-empty 'any' or 'all' list of tags"),
        ({"tags": {"some": ["a"]}}, "unknown tags filter key 'some'; use any or all"),
        ({"tags": {"any": ["bad/tag"]}}, "may only hold letters"),
        ({"tags": {"any": ["x" * 41]}}, "longer than 40"),
        ({"tags": {"any": [f"t{i}" for i in range(51)]}}, "filters.tags.any"),
        ({"agent": {"in": []}}, "filters.agent"),
        ({"agent": {"is": "bot"}}, "unknown agent filter key 'is'; use in"),
        ({"agent": ""}, "filters.agent"),
        ({"agent": 5}, "filters.agent"),
        ({"metadata": "env=prod"}, "filters.metadata"),
        ({"metadata": {"blob": "x" * 5000}}, "the limit is 4096 bytes"),
        ({"metadata": {f"k{i}": i for i in range(21)}}, "filters.metadata"),
        ("tags", "filters"),
        ([], "filters"),
    ],
)
def test_bad_filters_are_422_with_a_clear_message(client, auth, shop, filters, message):
    response = post(client, {"query": QUERY, "filters": filters}, auth)
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["code"] == "validation_error"
    assert message in body["detail"]
    assert not RetrievalEvent.objects.exists()


def test_filters_with_nan_or_nul_never_500(client, auth, shop):
    nan = '{"query": "coupon", "filters": {"metadata": {"score": NaN}}}'
    response = post(client, nan, auth)
    assert response.status_code == 422 and "NaN" in response.json()["detail"]
    nul = {"query": QUERY, "filters": {"metadata": {"env": "pr\u0000od"}, "agent": "bot\u0000"}}
    assert served(post(client, nul, auth)) == []


def test_filters_documented_in_openapi(client):
    schema = client.get("/api/v1/openapi.json").json()
    components = schema["components"]["schemas"]
    filters = components["RetrieveFiltersIn"]
    assert set(filters["properties"]) == {"tags", "agent", "metadata", "tier"}
    assert filters["additionalProperties"] is False and filters["examples"]


# --- inside the vector search -----------------------------------------------------------------


def test_selective_filter_is_not_starved_by_nearer_items(client, auth, bank):
    """300 approved items sit right next to the query; the 3 tagged "rare"
    ones are far from it. The HNSW index path is forced; a post-filter over
    the first candidate list would find none of them, but the filter runs
    inside the iterative scan, so all k=3 are served."""
    bank.min_similarity = -1.0
    bank.save(update_fields=["min_similarity"])
    rng = np.random.default_rng(11)
    query = embed_text(QUERY)

    factories.approved_items_near(bank, query, 300, 0.3, rng, tags=["common"])
    rare = factories.approved_items_near(
        bank, query, 3, 3.0, rng, tags=["rare"], source_agents=["rare-bot"], source_metadata=[{"env": "lab"}]
    )
    literal = "[" + ",".join(str(x) for x in query) + "]"
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memoryitem")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        filtered = (
            "SELECT id FROM memories_memoryitem WHERE bank_id = %s AND status = 'approved' AND tags && ARRAY['rare']::varchar[] "
            "ORDER BY embedding <=> %s::vector LIMIT 3"
        )
        cursor.execute("EXPLAIN " + filtered, [bank.pk, literal])
        assert "memoryitem_embedding_hnsw" in "\n".join(row[0] for row in cursor.fetchall())
        # The control: without the iterative scan, the first candidate list holds none of the rare items.
        cursor.execute("SET LOCAL hnsw.iterative_scan = off")
        cursor.execute("SET LOCAL hnsw.ef_search = 40")
        cursor.execute(filtered, [bank.pk, literal])
        assert len(cursor.fetchall()) < 3
        cursor.execute("RESET hnsw.iterative_scan")
        cursor.execute("RESET hnsw.ef_search")
    for filters in ({"tags": {"any": ["rare"]}}, {"agent": "rare-bot"}, {"metadata": {"env": "lab"}}):
        response = post(client, {"query": QUERY, "k": 3, "filters": filters}, auth)
        assert sorted(item["id"] for item in response.json()["items"]) == sorted(str(i.public_id) for i in rare)


def test_experience_mode_filters_the_experiences_items(bank, owner):
    bank.retrieval_mode = RetrievalMode.EXPERIENCES
    bank.min_similarity = -1.0
    near = experience_create(bank=bank, task=QUERY)
    far = experience_create(bank=bank, task="Book a table for two at an Italian restaurant on Friday")
    lesson_near = memory_item_propose(
        bank=bank, title="Near", description="d", content="c", origin="success", experience=near, source_agents=["a"]
    )
    lesson_far = memory_item_propose(
        bank=bank, title="Far", description="d", content="c", origin="success", experience=far, source_agents=["b"]
    )
    for item in (lesson_near, lesson_far):
        memory_item_approve(item=item, author=owner)
    unfiltered = retrieval_perform(bank=bank, query=QUERY, k=1)
    assert [item.title for item, _ in unfiltered.items] == ["Near"]
    # The nearest experience has no item of agent "b": the search moves on to the next one.
    filtered = retrieval_perform(bank=bank, query=QUERY, k=1, filters=RetrievalFilters(agents=("b",)))
    assert [item.title for item, _ in filtered.items] == ["Far"]


def test_filtered_retrieval_query_count_is_bounded(bank, owner, shop, django_assert_max_num_queries):
    filters = RetrievalFilters(tags_any=("checkout",), agents=("shop-bot/1.3",), metadata={"env": "prod"})
    retrieval_perform(bank=bank, query="warm up the model", filters=filters)
    # The same 7 statements as without filters (test_retrieval_query_count_does_not_grow_with_items).
    with django_assert_max_num_queries(7):
        result = retrieval_perform(bank=bank, query=QUERY, k=10, filters=filters)
    assert [item.title for item, _ in result.items] == ["Apply coupons on the cart page"]
