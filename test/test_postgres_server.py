"""The test server itself: CI must really have a PostgreSQL with pgvector to test the backend on."""

from __future__ import annotations

from .postgres_fixture import requires_postgres

pytestmark = requires_postgres


def test_the_test_server_has_pgvector(postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
        version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        server = conn.execute("SHOW server_version_num").fetchone()
    assert version is not None and tuple(int(p) for p in version[0].split(".")[:2]) >= (0, 8)
    assert int(server[0]) >= 150000


def test_each_test_gets_an_empty_database(postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
        conn.execute("CREATE TABLE left_behind (x int)")
    assert tables == (0,)
