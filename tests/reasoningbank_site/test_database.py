from django.db import connection

from accounts.models import ApiToken, AuditEvent
from accounts.services.audit import audit_event
from reasoningbank_site.db import insert_together


def test_database_is_postgres_with_pgvector(db):
    assert connection.vendor == "postgresql"
    with connection.cursor() as cur:
        cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        (version,) = cur.fetchone()
    major, minor = (int(x) for x in version.split(".")[:2])
    assert (major, minor) >= (0, 8), "iterative HNSW scans need pgvector 0.8+"


def test_insert_together_stores_several_models_rows_in_one_statement_each_with_its_key(bank, django_assert_num_queries):
    """reasoningbank_site.db.insert_together: rows of two models, one statement;
    each instance gets the key of the row that holds its own values."""
    events = [audit_event(action=f"test.event{n}", bank=bank, after={"n": n}) for n in range(3)]
    tokens = [
        ApiToken(bank=bank, name=f"token {n}", prefix=f"itogether{n}", token_hash=f"itogether-hash-{n}")
        for n in range(2)
    ]
    with django_assert_num_queries(1):
        insert_together(events, [], tokens)
    assert all(not e._state.adding for e in [*events, *tokens])
    for n, event in enumerate(events):
        assert AuditEvent.objects.get(pk=event.pk).action == f"test.event{n}"
        assert AuditEvent.objects.get(pk=event.pk).after == {"n": n}
    assert [ApiToken.objects.get(pk=t.pk).name for t in tokens] == ["token 0", "token 1"]
