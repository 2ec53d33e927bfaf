"""Prepared statements (issue 14): the agent API's token statement and the
retrieve search, run on every request, are prepared on each database
connection, so PostgreSQL parses them once and can keep one plan; the
search's text carries its bank, so a plan kept for it is that bank's. Off
with DB_PREPARED_STATEMENTS (a pooler that cannot keep them)."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories import selectors
from memories.models import ItemStatus
from reasoningbank_site.db import constants_inlined, server_bound_cursor
from tests import factories
from tests.memories.test_retrieval import DATE_PICKER, LOGIN, PAGINATION

RETRIEVE = "/api/v1/retrieve"


def prepared() -> dict[str, tuple[int, int]]:
    """This connection's prepared statements: text → (generic plans, custom plans)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        return {statement: (generic, custom) for statement, generic, custom in cursor.fetchall()}


def retrieve(client, secret: str, query: str) -> dict:
    response = client.post(
        RETRIEVE,
        json.dumps({"query": query, "k": 3}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
    )
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def web_bank(bank, approved):
    bank.min_similarity = 0.0
    bank.save()
    for texts in (LOGIN, PAGINATION, DATE_PICKER):
        approved(bank, *texts)
    return bank


def test_the_token_statement_and_the_search_are_prepared_once_and_planned_once(client, web_bank):
    secret = factories.make_token(web_bank)
    before = prepared()
    answers = [retrieve(client, secret, "log into my account on the shop") for _ in range(8)]
    assert [[i["id"] for i in a["items"]] for a in answers] == [[i["id"] for i in answers[0]["items"]]] * 8
    assert answers[0]["items"][0]["title"] == LOGIN[0]
    new = {statement: plans for statement, plans in prepared().items() if statement not in before}
    token = [plans for statement, plans in new.items() if "accounts_apitoken" in statement]
    search = [(statement, plans) for statement, plans in new.items() if "memories_memoryitem" in statement]
    # Each parsed once for the eight requests; after five plans for their values, PostgreSQL keeps a generic one.
    assert len(token) == 1 and sum(token[0]) == 8 and token[0][0] >= 1
    assert len(search) == 1 and sum(search[0][1]) == 8 and search[0][1][0] >= 1
    assert f'"bank_id" = {web_bank.pk}' in search[0][0]  # the bank is in its text, not a parameter
    # Django's query log (DEBUG, CaptureQueriesContext) still shows them, though psycopg keeps no text of a
    # prepared execution (reasoningbank_site.postgres).
    with CaptureQueriesContext(connection) as queries:
        retrieve(client, secret, "log into my account on the shop")
    logged = [q["sql"] for q in queries]
    assert any("accounts_apitoken" in sql for sql in logged) and any("<=>" in sql for sql in logged), logged


def test_with_db_prepared_statements_off_nothing_is_prepared(client, web_bank, settings):
    settings.DB_PREPARED_STATEMENTS = False
    secret = factories.make_token(web_bank)
    before = prepared()
    for _ in range(7):
        answer = retrieve(client, secret, "log into my account on the shop")
        assert answer["items"][0]["title"] == LOGIN[0]
    assert prepared() == before


def test_each_bank_has_its_own_prepared_search_and_serves_only_its_items(crowded, bank, other_bank):
    """Another bank's items crowd the query; after its search was prepared and
    planned generically, ours still finds exactly our three."""
    query, ours = crowded
    for _ in range(7):
        theirs, _counts = selectors.approved_items_search_counted(bank=other_bank, vector=query, k=3, min_similarity=-1)
        assert len(theirs) == 3 and all(item.bank_id == other_bank.pk for item, _ in theirs)
    for _ in range(7):
        found, _counts = selectors.approved_items_search_counted(bank=bank, vector=query, k=3, min_similarity=-1)
        assert sorted(item.pk for item, _ in found) == ours
    searches = {s: plans for s, plans in prepared().items() if "memories_memoryitem" in s}
    assert {b for b in (bank.pk, other_bank.pk) for s in searches if f'"bank_id" = {b} ' in s} == {
        bank.pk,
        other_bank.pk,
    }
    assert len(searches) == 2 and all(sum(plans) == 7 for plans in searches.values())


def test_constants_inlined_quotes_what_it_writes_and_keeps_what_it_is_told(db):
    vector = object()
    sql = "SELECT 1 WHERE a = %s AND b = %s AND c LIKE 'x%%' AND d = %s AND e = %s AND v <=> %s"
    inlined, params = constants_inlined(
        sql, [7, "O'Brien", "100%", ItemStatus.APPROVED, vector], kept=lambda p: p is vector
    )
    assert inlined == (
        "SELECT 1 WHERE a = 7 AND b = 'O''Brien' AND c LIKE 'x%%' AND d = '100%%' AND e = 'approved' AND v <=> %s"
    )
    assert params == (vector,)
    # Run prepared, as the search is: the literals are read back as given, the kept value bound by the server.
    marker = object()
    statement, params = constants_inlined(
        "SELECT %s, %s, %s, %s::text", [7, "O'Brien", "100%", marker], kept=lambda p: p is marker
    )
    with server_bound_cursor(prepared=True) as cursor:
        cursor.execute(statement, ["bound" for _ in params])
        assert cursor.fetchone() == (7, "O'Brien", "100%", "bound")
    with pytest.raises(TypeError):
        constants_inlined("a = %s", [1.5], kept=lambda p: False)
    with pytest.raises(ValueError):
        constants_inlined("a = %s", [1, 2], kept=lambda p: False)
