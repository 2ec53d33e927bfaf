from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import ApiToken, AuditEvent
from accounts.services.audit import audit_event
from reasoningbank_site import db
from reasoningbank_site.db import insert_together, insert_unless_taken
from trajectories.models import Trajectory
from trajectories.recording.ingest import EXTERNAL_ID_CONSTRAINT


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


def test_insert_together_statement_is_the_one_the_insert_compiler_writes(bank, item):
    """insert_together compiles its statement once per shape: for
    groups of one row and of several (UNNEST, one array per column), its SQL
    and parameters are what Django's insert compiler writes for the instances."""
    from memories.models import MemoryItemSupport, MemoryItemVersion

    for counts in ((1, 1, 1), (3, 3, 3), (2, 1, 3)):
        supports = [
            MemoryItemSupport(item=item, kind="distilled", title=f"t{n}", trajectory_ids=["a", n], cited_steps=[])
            for n in range(counts[0])
        ]
        versions = [
            MemoryItemVersion(item=item, number=10 + n, title=f'"quoted" {n}', tags=["x", "y\\\\"], action="supported")
            for n in range(counts[1])
        ]
        events = [audit_event(action="test.event", bank=bank, obj=item, after={"n": n}) for n in range(counts[2])]
        groups = (supports, versions, events)
        db._insert_together_sql(groups)
        hits = db._insert_together_sql_cached.cache_info().hits
        sql, params = db._insert_together_sql(groups)
        assert db._insert_together_sql_cached.cache_info().hits == hits + 1  # not compiled: from the cache
        compiled_sql, compiled_params = db._insert_together_sql(groups, cached=False)
        unwrap = lambda values: [  # noqa: E731 (Jsonb wraps the JSON fields, alone or in a column's list)
            [getattr(x, "obj", x) for x in v] if isinstance(v, list) else getattr(v, "obj", v) for v in values
        ]
        assert sql == compiled_sql and unwrap(params) == unwrap(compiled_params)
        assert ("UNNEST" in sql) == (max(counts) > 1)
    insert_together(*groups)
    assert MemoryItemVersion.objects.filter(item=item, number=10).get().tags == ["x", "y\\\\"]
    assert AuditEvent.objects.get(pk=events[2].pk).after == {"n": 2}


def test_insert_unless_taken_inserts_once_by_the_orms_statement(bank, django_assert_num_queries):
    """insert_unless_taken: one statement inserts the row, or finds its values of the constraint
    taken and inserts nothing; the statement, compiled once per model and constraint, is the one
    ``bulk_create(ignore_conflicts=True)`` runs with the constraint's partial unique index as its only
    arbiter and the key returned."""

    def run(external_id):
        return Trajectory(bank=bank, task="t", steps=[{"thought": "x"}], step_count=1, external_id=external_id)

    first, again = run("run-1"), run("run-1")
    with django_assert_num_queries(1):
        assert insert_unless_taken(first, EXTERNAL_ID_CONSTRAINT) is True
    with django_assert_num_queries(1):
        assert insert_unless_taken(again, EXTERNAL_ID_CONSTRAINT) is False
    assert not first._state.adding and again.pk is None and again._state.adding
    assert list(Trajectory.objects.filter(bank=bank).values_list("pk", "external_id")) == [(first.pk, "run-1")]

    with CaptureQueriesContext(connection) as orm:
        Trajectory.objects.bulk_create([again], ignore_conflicts=True)  # taken: inserts nothing
    sql, params = db._insert_unless_taken_sql(again, EXTERNAL_ID_CONSTRAINT)
    assert sql == db._insert_unless_taken_sql_cached(Trajectory, EXTERNAL_ID_CONSTRAINT)
    target = 'ON CONFLICT("bank_id", "external_id") WHERE "external_id" IS NOT NULL DO NOTHING'
    [ran] = orm.captured_queries
    expected = ran["sql"].replace("ON CONFLICT DO NOTHING", target) + ' RETURNING "trajectories_trajectory"."id"'
    assert connection.ops.compose_sql(sql, params) == expected
    assert Trajectory.objects.filter(bank=bank).count() == 1 and insert_unless_taken(
        run("run-2"), EXTERNAL_ID_CONSTRAINT
    )
