"""Transcript collections on PostgreSQL against SQLite, on a real server.

The judged transcript corpus (Claude Code and Codex sessions) and a folder of files are added to
both backends by the same commands; every query of the judged set, at each level and with the
filters, must give the same results in the same order with the same scores, totals and warnings,
before and after an update that appends to a session, moves one into the archive, rewrites one
and removes one. Turn ids, `session read` and `get SESSION:LINE` must match too, and the turn
statistics BM25 rests on must equal a count from scratch.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO, SAMPLE, CliResult, share_collections
from .models_fixture import requires_llama, requires_minilm
from .postgres_fixture import requires_postgres
from .test_postgres_bm25_sql import undo_version_9

pytestmark = requires_postgres

JUDGED = REPO / "fixtures" / "transcripts" / "judged"
SET = REPO / "evals" / "sets" / "transcripts-v1.jsonl"
SHOP = "-home-mei-shop/3f6c2a90-5b1d-4e7a-9c28-1d4e8b7a6f01.jsonl"
BLOG = "-home-mei-blog/c47b9e02-3a6f-4d18-8e51-7f2b0d9c4a23.jsonl"
INFRA = "-home-mei-infra/5d8a7c14-9e2b-4f3a-b061-2c7e4a9d1b45.jsonl"
ROLLOUT = "rollout-2025-10-14T08-30-00-4b7e1c2d-8f3a-4e9b-a5d6-0c1f2e3d4a56.jsonl"
ROLLOUT_DIR = "sessions/2025/10/14"
# Beyond the judged set: a phrase, a prefix, an exclusion, Chinese, a filter word, nothing.
EXTRA = ['"time zone"', "certif*", "certificate -nginx", "时区", "pytest", "zebrafish qqq"]
Cli = Callable[..., CliResult]


def _queries() -> list[str]:
    lines = SET.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["query"] for line in lines if line.strip()] + EXTRA


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    shutil.copytree(JUDGED, tmp_path / "agents")
    shutil.copytree(SAMPLE, tmp_path / "sample")
    return tmp_path


def _add_both(cli: Cli, url: str, root: Path) -> None:
    # Register on SQLite, the same list in the database (share_collections), update PostgreSQL.
    adds = (
        ("collection", "add", "--type", "claude", root / "agents" / "claude"),
        ("collection", "add", "--type", "codex", root / "agents" / "codex"),
        ("collection", "add", root / "sample", "--name", "sample"),
    )
    for add in adds:
        result = cli(*add, "--json")
        assert result.exit_code == 0, result.stderr
    share_collections(url)
    result = cli("--index", url, "update", "--json")
    assert result.exit_code == 0, result.stderr


_SHOWN = ("level", "session_id", "turn_id", "role", "run_index", "line", "matches", "sessions")
_TIMES = ("first_timestamp", "last_timestamp")


def _search(cli: Cli, index: tuple[str, ...], command: str, query: str, *options: str) -> dict[str, Any]:
    result = cli(*index, command, "--json", "-n", "10", *options, "--", query)
    assert result.exit_code == 0, (query, options, result.stderr)
    data = result.json()
    hits = []
    for hit in data["results"]:
        transcript = hit.get("transcript") or {}
        hits.append(
            (
                hit["virtual_path"],
                hit["score"],
                tuple(transcript.get(key) for key in (*_SHOWN, *_TIMES)),
                hit["snippet"],
            )
        )
    return {
        "results": hits,
        "total": data.get("total"),
        "warnings": [w["code"] for w in data.get("warnings", [])],
    }


def _assert_same(cli: Cli, url: str, *options: str, queries: list[str] | None = None) -> int:
    """Every query on both backends; how many results they gave."""
    found = 0
    for query in queries or _queries():
        sqlite = _search(cli, (), "search", query, *options)
        postgres = _search(cli, ("--index", url), "search", query, *options)
        assert postgres == sqlite, (query, options)
        found += len(sqlite["results"])
    return found


def test_transcript_search_ranks_as_on_sqlite(cli: Cli, postgres_url: str, corpus: Path) -> None:
    _add_both(cli, postgres_url, corpus)
    scope = ("-c", "claude", "-c", "codex")
    assert _assert_same(cli, postgres_url, *scope) > 100  # turns (the default level)
    assert _assert_same(cli, postgres_url, *scope, "--level", "session") > 50
    some = _queries()[::3]
    for level in ("run", "project"):
        assert _assert_same(cli, postgres_url, *scope, "--level", level, queries=some) > 10, level
    # with the file collection: merged by score on both
    assert _assert_same(cli, postgres_url, "--level", "session", queries=some) > 10
    assert _assert_same(cli, postgres_url, queries=some) > 10
    # filters: role, time, project
    for options in (
        ("--role", "user"),
        ("--role", "assistant", "--role", "tool"),
        ("--since", "2025-10-01", "--until", "2025-10-31"),
        ("--project", "shop"),
        ("--project", "infra", "--level", "session"),
    ):
        _assert_same(cli, postgres_url, *scope, *options, queries=some)


def _append(path: Path, text: str) -> None:
    """One more assistant message at the end of a Claude session, following its last record."""
    last = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    record = {
        "type": "assistant",
        "uuid": "appended-1",
        "parentUuid": last["uuid"],
        "sessionId": last["sessionId"],
        "timestamp": "2025-10-02T08:00:00.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
    }
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def _turn_rows(url: str, index_path: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    import psycopg
    import sqlean

    sql = "SELECT id, doc_id, seq, turn_id, start_line, end_line FROM transcript_turns ORDER BY id"
    sqlite = sqlean.connect(str(index_path))
    try:
        lite = [tuple(row) for row in sqlite.execute(sql)]
    finally:
        sqlite.close()
    with psycopg.connect(url) as conn:
        pg = [tuple(row) for row in conn.execute(sql)]
    return lite, pg


@pytest.mark.sqlite_only("compares a SQLite index (the default) with a PostgreSQL one")
def test_an_update_keeps_sessions_and_rankings_equal(
    cli: Cli, postgres_url: str, corpus: Path, index_path: Path
) -> None:
    _add_both(cli, postgres_url, corpus)
    claude = corpus / "agents" / "claude"
    codex = corpus / "agents" / "codex"
    _append(claude / SHOP, "Also pinned the kumquat surcharge to the store time zone.")
    (codex / ROLLOUT_DIR / ROLLOUT).rename(codex / "archived_sessions" / ROLLOUT)  # Codex archives it
    (claude / BLOG).unlink()
    rewritten = claude / INFRA
    rewritten.write_text("\n".join(rewritten.read_text(encoding="utf-8").splitlines()[:3]) + "\n")
    reports = []
    for index in ((), ("--index", postgres_url)):
        result = cli(*index, "update", "--json")
        assert result.exit_code == 0, result.stderr
        reports.append({c["name"]: c for c in result.json()["collections"]})
    for name in ("claude", "codex"):
        sqlite, postgres = reports[0][name], reports[1][name]
        for key in ("added", "updated", "appended", "moved", "removed", "unchanged", "turns"):
            assert postgres.get(key) == sqlite.get(key), (name, key)
    assert reports[0]["claude"]["appended"] == [SHOP] and reports[0]["claude"]["removed"] == [BLOG]

    lite, pg = _turn_rows(postgres_url, index_path)
    assert pg == lite and len(lite) > 50  # the same turn ids, documents and places
    assert _assert_same(cli, postgres_url, "-c", "claude", "-c", "codex") > 100
    assert _assert_same(cli, postgres_url, "--level", "session", queries=_queries()[::3]) > 10
    (hit,) = _search(cli, ("--index", postgres_url), "search", "kumquat")["results"]
    assert hit[0].endswith(f"{SHOP}:{hit[2][5]}")  # the appended turn, found on PostgreSQL


def _read(cli: Cli, index: tuple[str, ...], *args: str) -> Any:
    result = cli(*index, *args, "--json")
    assert result.exit_code == 0, (args, result.stderr)
    return result.json()


def test_session_read_and_get_read_as_on_sqlite(cli: Cli, postgres_url: str, corpus: Path) -> None:
    _add_both(cli, postgres_url, corpus)
    session = SHOP.split("/")[1].removesuffix(".jsonl")
    for args in (
        ("session", "read", session),
        ("session", "read", session[:8], "--from-line", "4", "--limit", "3"),
        ("session", "read", f"claude/{SHOP}", "--run", "1"),
        ("session", "read", session, "--raw"),
        ("get", f"claude/{SHOP}:7"),
        ("get", f"claude/{SHOP}"),
    ):
        sqlite = _read(cli, (), *args)
        postgres = _read(cli, ("--index", postgres_url), *args)
        assert postgres == sqlite, args
    missing = cli("--index", postgres_url, "session", "read", "no-such-session", "--json")
    assert missing.exit_code != 0 and missing.error()["code"] == "DOC_NOT_FOUND"


def test_turn_statistics_and_removal_keep_the_tables_consistent(
    cli: Cli, postgres_url: str, corpus: Path
) -> None:
    """turn_totals, kept by update, equals a count from scratch; no posting outlives its turn;
    removing the collections leaves no turn, run, session or posting behind."""
    import psycopg

    _add_both(cli, postgres_url, corpus)
    _append(corpus / "agents" / "claude" / SHOP, "One more line about the surcharge.")
    (corpus / "agents" / "claude" / BLOG).unlink()
    assert cli("--index", postgres_url, "update").exit_code == 0

    def counts() -> tuple[Any, ...]:
        with psycopg.connect(postgres_url) as conn:
            kept = conn.execute("SELECT turns, tokens FROM turn_totals").fetchone()
            recount = conn.execute(
                "SELECT count(*), coalesce(sum(fts_tokens), 0) FROM transcript_turns"
            ).fetchone()
            orphans = conn.execute(
                "SELECT count(*) FROM turn_postings AS p"
                " WHERE NOT EXISTS (SELECT 1 FROM transcript_turns AS t WHERE t.id = p.turn_id)"
            ).fetchone()[0]
            left = conn.execute(
                "SELECT (SELECT count(*) FROM transcript_sessions), (SELECT count(*) FROM transcript_runs),"
                " (SELECT count(*) FROM turn_postings)"
            ).fetchone()
        return tuple(kept), tuple(recount), orphans, tuple(left)

    kept, recount, orphans, left = counts()
    assert kept == recount and kept[0] > 50 and orphans == 0 and left[0] == 9
    for name in ("claude", "codex"):
        # remove from the PostgreSQL index only: the config keeps the collection for SQLite
        result = cli("--index", postgres_url, "collection", "remove", name, "--json")
        assert result.exit_code == 0, result.stderr
    assert counts() == ((0, 0), (0, 0), 0, (0, 0, 0))


EDGE = REPO / "fixtures" / "transcripts"
VECTOR_QUERIES = [
    "renaming a directory leaves the index out of date",
    "a secret printed in the tool output",
    "apply a patch to the parser",
    "why is the build slow",
    "索引",
]


@requires_llama
@requires_minilm
def test_transcript_vsearch_and_query_score_as_on_sqlite(
    cli: Cli, postgres_url: str, tmp_path: Path, model: Path
) -> None:
    """The edge-case sessions and a note, embedded on both (the real MiniLM): `vsearch` and
    `query --no-expand --no-rerank` at each level give the same units, in the same order, with
    the same scores (to 1e-4: float32 vectors on both sides)."""
    shutil.copytree(EDGE / "claude", tmp_path / "claude")
    shutil.copytree(EDGE / "codex", tmp_path / "codex")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "stale.md").write_text(
        "# Stale index\n\nWhen a renamed folder leaves the index stale, run update.\n"
    )
    for add in (
        ("--type", "claude", tmp_path / "claude"),
        ("--type", "codex", tmp_path / "codex"),
        (notes, "--name", "notes"),
    ):
        assert cli("collection", "add", *add).exit_code == 0
    share_collections(postgres_url)
    pg = ("--index", postgres_url)
    assert cli(*pg, "update").exit_code == 0
    for index in ((), pg):
        result = cli(*index, "embed", "--json")
        assert result.exit_code == 0, result.stderr
    compared = 0
    for command, extra in (("vsearch", ("--min-score", "0")), ("query", ("--no-expand", "--no-rerank"))):
        for level in ("turn", "run", "session", "project"):
            for query in VECTOR_QUERIES:
                options = ("--level", level, *extra)
                sqlite = _search(cli, (), command, query, *options)
                postgres = _search(cli, pg, command, query, *options)
                assert [h[0] for h in postgres["results"]] == [h[0] for h in sqlite["results"]], (
                    query,
                    options,
                )
                for ours, theirs in zip(postgres["results"], sqlite["results"], strict=True):
                    assert ours[1] == pytest.approx(theirs[1], abs=1e-4), (query, options)
                    assert ours[2] == theirs[2], (query, options)
                assert postgres["warnings"] == sqlite["warnings"], (query, options)
                compared += len(sqlite["results"])
    assert compared > 100


def test_doctor_checks_the_turn_totals(cli: Cli, postgres_url: str, corpus: Path) -> None:
    import psycopg

    _add_both(cli, postgres_url, corpus)
    result = cli("--index", postgres_url, "doctor", "--json")
    checks = {c["check"]: (c["status"], c["detail"]) for c in result.json()}
    assert result.exit_code == 0 and checks["index.turn_totals"][0] == "ok", checks
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE collection_turn_totals SET turns = turns - 1")  # summed by turn_totals
    result = cli("--index", postgres_url, "doctor", "--json")
    checks = {c["check"]: (c["status"], c["detail"]) for c in result.json()}
    assert result.exit_code == 4 and checks["index.turn_totals"][0] == "fail", checks


def _undo_version_6(conn: Any) -> None:
    """The tables as version 5 had them: one row of frequencies per term, one of totals."""
    conn.execute("DROP FUNCTION tansaku_take_ids")
    conn.execute("DROP SEQUENCE document_ids, turn_ids")
    conn.execute("DROP VIEW term_stats, keyword_totals, turn_totals")
    conn.execute(
        "CREATE TABLE term_stats AS"
        " SELECT term, sum(df)::integer AS df FROM collection_term_stats GROUP BY term"
    )
    conn.execute("ALTER TABLE term_stats ADD PRIMARY KEY (term)")
    for table, columns in (("keyword_totals", "docs, tokens"), ("turn_totals", "turns, tokens")):
        sums = ", ".join(f"coalesce(sum({c}), 0)::bigint AS {c}" for c in columns.split(", "))
        conn.execute(f"CREATE TABLE {table} AS SELECT true AS one, {sums} FROM collection_{table}")
        conn.execute(f"DROP TABLE collection_{table}")
    conn.execute("DROP TABLE collection_term_stats")


def test_a_version_4_database_is_upgraded_by_update(cli: Cli, postgres_url: str, corpus: Path) -> None:
    """A database made before transcripts (schema 4) says so to readers, and the next `update`
    adds the transcript tables, keeping what it holds."""
    import psycopg

    pg = ("--index", postgres_url)
    assert cli(*pg, "collection", "add", corpus / "sample", "--name", "sample").exit_code == 0
    before = _search(cli, pg, "search", "backup")
    undo_version_9(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE skipped_files")  # version 7
        _undo_version_6(conn)
        for table in (
            "transcript_sessions",
            "transcript_runs",
            "transcript_turns",
            "turn_postings",
            "turn_totals",
        ):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("DROP TABLE collections")  # version 8: the list was the config file's then
        conn.execute("DROP TABLE contexts")
        conn.execute("UPDATE tansaku_schema SET version = 4")
    from tansaku.config import settings
    from tansaku.types import Collection

    config = Path(os.environ["TANSAKU_CONFIG_DIR"]) / "index.toml"
    settings.save(config, settings.Config({"sample": Collection("sample", str(corpus / "sample"))}))
    stale = cli(*pg, "search", "backup", "--json")
    assert stale.exit_code == 3 and stale.error()["code"] == "INDEX_SCHEMA_MISMATCH"
    assert cli(*pg, "update").exit_code == 0
    assert _search(cli, pg, "search", "backup") == before and before["results"]
    added = cli(*pg, "collection", "add", "--type", "claude", corpus / "agents" / "claude", "--json")
    assert added.exit_code == 0, added.stderr
    assert _search(cli, pg, "search", "freezegun", "-c", "claude")["results"]
