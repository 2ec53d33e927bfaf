from django.db import connection


def test_database_is_postgres_with_pgvector(db):
    assert connection.vendor == "postgresql"
    with connection.cursor() as cur:
        cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        (version,) = cur.fetchone()
    major, minor = (int(x) for x in version.split(".")[:2])
    assert (major, minor) >= (0, 8), "iterative HNSW scans need pgvector 0.8+"
