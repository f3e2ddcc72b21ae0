"""The PostgreSQL backend (`--index postgresql://...`) against the SQLite one, on a real server.

The same corpus is added to both backends by the same commands; then every query must give the
same results in the same order with the same scores, totals and warnings, before and after an
update that changes, moves and removes files. Commands the backend lacks fail with their own
error code, never a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import REPO, SAMPLE, CliResult, share_collections
from .models_fixture import requires_llama, requires_minilm
from .postgres_fixture import requires_postgres
from .test_keyword_ranking import CASED_DOCS, CODE_DOCS, DOCS, SHARED_DOCS

pytestmark = requires_postgres

QUERIES = [
    # English words, a sentence, a phrase, a prefix, an exclusion
    "backup",
    "restore backups",
    "how do I restore a backup from yesterday on the server",
    '"exit code"',
    "compress*",
    "restore -laptop",
    # command-line options and names
    "tar -x",
    "tar -czf backup.tar.gz",
    "--preserve-root",
    "find -mtime",
    "du -sh",
    "cut -d: -f1",
    "python -B",
    "os.path.join",
    "os.environ",
    "ProgressBar",
    "click.IntRange",
    "ignore-scripts",
    "mkdir: cannot create directory",
    # Chinese (segmented before indexing, as with SQLite)
    "压缩",
    "恢复 备份",
    "权限",
    "如何 压缩 文件",
    # nothing, or only part of it
    "zebrafish the",
    "zebrafish qqq",
]


def _write(root: Path, docs: dict[str, str]) -> None:
    for rel, text in docs.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    sample = tmp_path / "sample"
    shutil.copytree(SAMPLE, sample)
    docs = tmp_path / "docs"
    for group in (DOCS, CASED_DOCS, SHARED_DOCS, CODE_DOCS):
        _write(docs, group)
    return sample, docs


def _add_both(cli: Callable[..., CliResult], url: str, sample: Path, docs: Path) -> None:
    for index in ((), ("--index", url)):
        for folder, name, masks in ((sample, "sample", "**/*.md"), (docs, "docs", "**/*")):
            # The config is shared (the URL only moves the index): register on the first pass only.
            if index:
                share_collections(url)  # each index has its own list (issue 40): the same in both
                result = cli(*index, "update", "-c", name)
            else:
                result = cli("collection", "add", folder, "--name", name, "--mask", masks)
            assert result.exit_code == 0, result.stderr


def _search(cli: Callable[..., CliResult], index: tuple[str, ...], query: str, *options: str) -> dict:
    result = cli(*index, "search", "--json", "-n", "10", *options, "--", query)
    assert result.exit_code == 0, (query, result.stderr)
    data = result.json()
    return {
        "results": [(hit["path"], hit["score"], hit.get("collection")) for hit in data["results"]],
        "total": data.get("total"),
        "warnings": [w["code"] for w in data.get("warnings", [])],
    }


def _assert_same(cli: Callable[..., CliResult], url: str, *options: str) -> int:
    found = 0
    for query in QUERIES:
        sqlite = _search(cli, (), query, *options)
        postgres = _search(cli, ("--index", url), query, *options)
        assert postgres == sqlite, query
        found += len(sqlite["results"])
    return found


def test_search_ranks_as_on_sqlite(cli, postgres_url: str, folders: tuple[Path, Path]) -> None:
    _add_both(cli, postgres_url, *folders)
    assert _assert_same(cli, postgres_url) > 100
    assert _assert_same(cli, postgres_url, "-c", "docs") > 50  # one collection: ties go by path


def test_an_update_keeps_the_ranking_equal(cli, postgres_url: str, folders: tuple[Path, Path]) -> None:
    sample, docs = folders
    _add_both(cli, postgres_url, sample, docs)
    (sample / "guides" / "backups.md").write_text(
        "# Backups\n\nNightly tar archives of /srv.\n", encoding="utf-8"
    )
    (sample / "notes" / "ideas.md").unlink()
    (docs / "man1" / "tar.1.txt").rename(docs / "man1" / "gtar.1.txt")
    _write(
        docs, {"notes/new.md": "# Restore drill\n\nRestore the backup to a scratch server, then compare.\n"}
    )
    for index in ((), ("--index", postgres_url)):
        result = cli(*index, "update", "--json")
        assert result.exit_code == 0, result.stderr
    assert _assert_same(cli, postgres_url) > 100


def test_update_keeps_the_term_statistics_it_ranks_by(cli, postgres_url: str, folders: tuple[Path, Path]):
    """term_stats and keyword_totals, kept row by row by update, equal a count from scratch."""
    import psycopg

    sample, docs = folders
    _add_both(cli, postgres_url, sample, docs)
    shutil.rmtree(sample / "zh")
    (docs / "notes" / "laptop.md").write_text("# Laptop\n\nNothing to restore here.\n", encoding="utf-8")
    assert cli("--index", postgres_url, "update").exit_code == 0
    with psycopg.connect(postgres_url) as conn:
        kept = dict(conn.execute("SELECT term, df FROM term_stats").fetchall())
        counted = dict(
            conn.execute(
                "SELECT p.term, count(DISTINCT u.d) FROM postings AS p, unnest(p.docs) AS u(d)"
                " GROUP BY p.term"
            ).fetchall()
        )
        totals = conn.execute("SELECT docs, tokens FROM keyword_totals").fetchone()
        actual = conn.execute("SELECT count(*), sum(fts_tokens) FROM documents").fetchone()
    assert kept == counted
    assert "压缩" not in kept  # the Chinese pages are gone, and their words with them
    assert totals == actual


def test_status_get_and_ls_read_the_database(cli, postgres_url: str, folders: tuple[Path, Path]) -> None:
    sample, docs = folders
    _add_both(cli, postgres_url, sample, docs)
    status = cli("--index", postgres_url, "status", "--json")
    assert status.exit_code == 0, status.stderr
    data = status.json()
    assert data["index_path"].startswith("postgresql://")
    server = data["server"]
    assert server["product"].startswith("PostgreSQL ") and server["pgvector_available"]
    assert server["round_trip_ms"] > 0
    assert "server: PostgreSQL" in cli("--index", postgres_url, "status").stdout
    counts = {c["collection"]["name"]: c["documents"] for c in data["collections"]}
    assert counts == {"sample": 13, "docs": len({*DOCS, *CASED_DOCS, *SHARED_DOCS, *CODE_DOCS})}
    sqlite_get = cli("get", "tansaku://sample/guides/backups.md", "-l", "5")
    pg_get = cli("--index", postgres_url, "get", "tansaku://sample/guides/backups.md", "-l", "5")
    assert pg_get.exit_code == 0 and pg_get.stdout == sqlite_get.stdout
    assert cli("--index", postgres_url, "ls", "sample/zh").stdout == cli("ls", "sample/zh").stdout


def test_the_config_can_name_the_database(cli, postgres_url: str, config_path: Path, sample: Path) -> None:
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(f'[index]\nurl = "{postgres_url}"\n', encoding="utf-8")
    assert cli("collection", "add", sample, "--name", "sample").exit_code == 0
    assert 'url = "postgresql://' in config_path.read_text(encoding="utf-8")  # kept when saved
    hits = cli("search", "--json", "backup").json()["results"]
    assert hits and hits[0]["path"] == "guides/backups.md"
    assert not Path(os.environ["TANSAKU_INDEX_PATH"]).exists()  # no SQLite file was made


def test_a_server_that_does_not_answer_is_unreachable_not_empty(cli, tmp_path: Path) -> None:
    url = f"postgresql://postgres@/nothing?host={tmp_path}"  # no server listens on this socket folder
    result = cli("--index", url, "search", "backup", "--json")
    assert result.exit_code == 3, result.stderr
    assert result.error()["code"] == "INDEX_UNREACHABLE"


def test_a_missing_index_in_a_reachable_database_is_index_missing(cli, postgres_url: str) -> None:
    result = cli("--index", postgres_url, "search", "backup", "--json")
    assert result.exit_code == 3
    assert result.error()["code"] == "INDEX_MISSING"


def _run(config_dir: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TANSAKU_CONFIG_DIR": str(config_dir), "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(
        [sys.executable, "-m", "tansaku", "--index", url, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.subprocess
def test_two_processes_with_their_own_configs_share_one_database(postgres_url: str, tmp_path: Path) -> None:
    """Two machines' worth of tansaku: each its own config, one database; what one indexes the
    other finds at once, without an update of its own."""
    notes = tmp_path / "notes"
    _write(notes, {"a.md": "# Alpha\n\nThe first runbook.\n"})
    first, second = tmp_path / "first", tmp_path / "second"
    assert _run(first, postgres_url, "collection", "add", str(notes), "--name", "notes").returncode == 0
    second.mkdir()  # no config to copy: the collection list is the database's (issue 40)
    found = _run(second, postgres_url, "search", "--json", "runbook")
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)["results"]] == ["a.md"]
    _write(notes, {"b.md": "# Beta\n\nThe second runbook, on failover.\n"})
    assert _run(first, postgres_url, "update").returncode == 0
    found = _run(second, postgres_url, "search", "--json", "failover")
    assert [hit["path"] for hit in json.loads(found.stdout)["results"]] == ["b.md"]


def test_a_second_writer_waits_then_fails_naming_the_holder_and_readers_never_wait(
    cli, postgres_url: str, sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from tansaku.store.postgres.backend import LOCK_SPACE, WRITER_LOCK

    assert cli("--index", postgres_url, "collection", "add", sample, "--name", "sample").exit_code == 0
    monkeypatch.setenv("TANSAKU_LOCK_TIMEOUT", "0.3")
    with psycopg.connect(postgres_url, autocommit=True, application_name="tansaku update other") as holder:
        holder.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_SPACE, WRITER_LOCK))
        locked = cli("--index", postgres_url, "update", "--json")
        assert locked.exit_code == 3, locked.stderr
        error = locked.error()
        assert error["code"] == "INDEX_LOCKED"
        assert f"server pid {holder.info.backend_pid}" in error["message"]
        assert "tansaku update other" in error["message"]
        found = cli("--index", postgres_url, "search", "--json", "backup")  # a reader does not wait
        assert found.exit_code == 0 and found.json()["results"]
    assert cli("--index", postgres_url, "update").exit_code == 0  # the lock went with its holder


FIELDS = REPO / "fixtures" / "fields"
FORMATS = REPO / "fixtures" / "formats"


def test_fields_and_extracted_formats_are_kept_as_on_sqlite(cli, postgres_url: str, tmp_path: Path) -> None:
    """Front matter and the extraction cache are written by update on PostgreSQL too: a search
    with --fields or --where, and over an EPUB and a Word file, answers as on SQLite."""
    garden, docs = tmp_path / "garden", tmp_path / "docs"
    shutil.copytree(FIELDS, garden)
    docs.mkdir()
    for name in ("guide.docx", "guide.epub"):
        shutil.copy(FORMATS / name, docs / name)
    for folder, name, masks in ((garden, "garden", "**/*.md"), (docs, "docs", "**/*.{docx,epub}")):
        assert cli("collection", "add", folder, "--name", name, "--mask", masks).exit_code == 0
        share_collections(postgres_url)
        assert cli("--index", postgres_url, "update", "-c", name).exit_code == 0
    for query, options in (("garden", ("--fields",)), ("harbour", ()), ("guide", ("-c", "docs"))):
        sqlite = cli("search", query, "--json", "-n", "10", *options)
        postgres = cli("--index", postgres_url, "search", query, "--json", "-n", "10", *options)
        assert sqlite.exit_code == postgres.exit_code == 0, postgres.stderr
        assert sqlite.json()["results"], query  # something to compare
        assert postgres.json()["results"] == sqlite.json()["results"], query
    assert any(hit.get("fields") for hit in cli("search", "garden", "--json", "--fields").json()["results"])
    where = ("garden", "--json", "-n", "10", "--where", "tags=python", "--fields")
    filtered = cli("--index", postgres_url, "search", *where)
    assert filtered.exit_code == 0, filtered.stderr
    results = filtered.json()["results"]
    assert results and results == cli("search", *where).json()["results"]


def _doctor(cli, url: str, *options: str) -> tuple[int, dict[str, tuple[str, str]]]:
    result = cli("--index", url, "doctor", "--json", *options)
    checks = {c["check"]: (c["status"], c["detail"]) for c in result.json()}
    return result.exit_code, checks


def test_doctor_checks_the_server_and_the_statistics_ranking_rests_on(cli, postgres_url: str, sample: Path):
    import psycopg

    assert cli("--index", postgres_url, "collection", "add", sample, "--name", "sample").exit_code == 0
    code, checks = _doctor(cli, postgres_url, "--deep")
    assert code == 0, checks
    assert checks["index.server"][0] == "ok" and "PostgreSQL" in checks["index.server"][1]
    assert checks["index.pgvector"][0] == "ok"
    assert checks["index"][0] == checks["index.keyword_totals"][0] == checks["index.term_stats"][0] == "ok"
    assert "config.keys" not in checks  # [index] is a known table
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # kept per collection (the views term_stats and keyword_totals sum them)
        conn.execute("UPDATE collection_term_stats SET df = df + 1 WHERE term = 'backup'")
        conn.execute("UPDATE collection_keyword_totals SET tokens = tokens + 7")
    code, checks = _doctor(cli, postgres_url, "--deep")
    assert code == 4
    assert checks["index.term_stats"][0] == "fail" and "(backup)" in checks["index.term_stats"][1]
    assert checks["index.keyword_totals"][0] == "fail"
    assert "index.term_stats" not in _doctor(cli, postgres_url)[1]  # a full pass only with --deep


def test_doctor_checks_the_folders_of_the_collections_the_database_lists(
    cli, postgres_url: str, sample: Path, tmp_path: Path
) -> None:
    """A database keeps its own collection list (not the config file's): doctor checks those
    folders, and a missing one fails with its fix, as on SQLite."""
    import shutil

    notes = tmp_path / "team-notes"
    shutil.copytree(sample, notes)
    assert cli("--index", postgres_url, "collection", "add", notes, "--name", "team").exit_code == 0
    code, checks = _doctor(cli, postgres_url)
    assert code == 0, checks
    assert checks["config.collection.team"] == ("ok", f"team: {notes}")
    shutil.rmtree(notes)
    code, checks = _doctor(cli, postgres_url)
    assert code == 4
    assert checks["config.collection.team"] == ("fail", f"team: folder {notes} does not exist")


@requires_llama
@requires_minilm
def test_doctor_checks_the_models_and_the_machine_as_on_sqlite(
    cli, postgres_url: str, sample: Path, model: Path
) -> None:
    """The model and device checks run on PostgreSQL too; the vector dimensions are the
    database's, and there is no disk check (the database's disk is the server's)."""
    import psycopg

    assert cli("--index", postgres_url, "collection", "add", sample, "--name", "sample").exit_code == 0
    assert cli("--index", postgres_url, "embed").exit_code == 0
    code, checks = _doctor(cli, postgres_url)
    assert code == 0, checks
    assert checks["model.embed"][0] == "ok" and str(model) in checks["model.embed"][1]
    assert checks["vectors.dims"] == ("ok", "13 vectors of 384 dims")
    assert {"device.cpu", "device.cores", "device.memory", "models.llama_cpp"} <= set(checks)
    assert "device.disk" not in checks and "vectors.extension" not in checks
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE embed_models SET dims = 768")
    code, checks = _doctor(cli, postgres_url)
    assert code == 4
    assert checks["vectors.dims"][0] == "fail" and "768-dim vectors" in checks["vectors.dims"][1]


WHERE = [
    ("garden", "tags=python"),
    ("garden", "tags=python", "status=published"),
    ("garden", "status!=draft"),
    ("planting OR harvest", "date>=2024-06-01"),
    ("garden", "updated<=2024-06-15"),
    ("garden", "priority<2"),
    ("garden", "TAGS=compost"),
    ("garden", "author.name=aiko"),
    ("compost", "nothing=here"),
]


def test_where_filters_as_on_sqlite(cli, postgres_url: str, tmp_path: Path) -> None:
    """`--where` on PostgreSQL (its own SQL over document_fields) keeps what SQLite keeps: the
    same results, order, scores and totals, the filter applied before the limit."""
    garden = tmp_path / "garden"
    shutil.copytree(REPO / "fixtures" / "fields", garden)
    assert cli("collection", "add", garden, "--name", "garden").exit_code == 0
    share_collections(postgres_url)
    assert cli("--index", postgres_url, "update").exit_code == 0
    kept = 0
    for query, *conditions in WHERE:
        where = [arg for condition in conditions for arg in ("--where", condition)]
        for limit in ("1", "10"):
            sqlite = _search(cli, (), query, "-n", limit, *where)
            assert _search(cli, ("--index", postgres_url), query, "-n", limit, *where) == sqlite, conditions
            kept += len(sqlite["results"])
    assert kept > 20
