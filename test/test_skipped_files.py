"""Files `update` skips on purpose (corrupt, binary, too large) are skipped, not pending: `status`
and `doctor` stop asking for an update until such a file changes (issue 36, item 6)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from .conftest import index_sql
from .made_files import corrupt_pdf, too_large_text

pytestmark = pytest.mark.both_backends
LIMIT = 4096  # the file size limit these tests set, so a too-large file stays small
REASONS = {"binary": 1, "corrupt": 1, "too-large": 1}


@pytest.fixture
def docs(tmp_path: Path, config_path: Path) -> Path:
    """A folder with one good file and three that `update` refuses, added as collection `docs`."""
    config_path.parent.mkdir(parents=True, exist_ok=True)
    with config_path.open("a", encoding="utf-8") as config:
        config.write(f"\n[settings]\nmax_file_bytes = {LIMIT}\n")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nA file that is indexed.\n", encoding="utf-8")
    corrupt_pdf(folder / "broken.pdf")
    too_large_text(folder / "huge.md", 2 * LIMIT)
    (folder / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    return folder


def add(cli: Any, folder: Path) -> dict:
    result = cli(
        "collection", "add", folder, "--name", "docs", "--mask", "**/*.md", "--formats", "pdf", "--json"
    )
    assert result.exit_code == 0, result.stderr
    [collection] = result.json()["collections"]
    return collection


def status(cli: Any) -> dict:
    result = cli("status", "--json")
    assert result.exit_code == 0, result.stderr
    return result.json()


def stale_checks(cli: Any) -> list[dict]:
    return [c for c in cli("doctor", "--json").json() if c["check"] == "index.stale"]


def docs_info(data: dict) -> dict:
    [info] = [c for c in data["collections"] if c["collection"]["name"] == "docs"]
    return info


def change(path: Path) -> None:
    """A new modification time, as an editor saving the same bytes gives."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_files_skipped_on_purpose_are_not_pending_until_they_change(cli, docs: Path, index_backend: str):
    sqlite = index_backend == "sqlite"  # doctor's index.stale check reads SQLite indexes only
    report = add(cli, docs)
    assert report["added"] == ["good.md"]
    assert sorted(s["path"] for s in report["skipped"]) == ["broken.pdf", "huge.md", "image.md"]
    data = status(cli)
    assert data["pending"] == []
    info = docs_info(data)
    assert (info["documents"], info["skipped"], info["skipped_reasons"]) == (1, 3, REASONS)
    text = cli("status").stdout
    assert "pending: (nothing)" in text and "docs: 3 skipped (binary 1, corrupt 1, too-large 1)" in text
    assert stale_checks(cli) == []
    # Every listing of the collection counts the same.
    shown = cli("collection", "show", "docs", "--json").json()
    listed = [c for c in cli("collection", "list", "--json").json() if c["collection"]["name"] == "docs"]
    ls = [c for c in cli("ls", "--json").json() if c["collection"]["name"] == "docs"]
    for other in (shown, *listed, *ls):
        assert (other["skipped"], other["skipped_reasons"]) == (3, REASONS)
    assert "3 skipped (binary 1, corrupt 1, too-large 1)" in cli("collection", "show", "docs").stdout

    # A skipped file that changes is pending again, and update tries it again.
    change(docs / "broken.pdf")
    data = status(cli)
    assert data["pending"] == ["docs: 1 new, 0 changed, 0 deleted on disk; run `tansaku update -c docs`"]
    assert (docs_info(data)["skipped"], docs_info(data)["skipped_reasons"]) == (
        2,
        {"binary": 1, "too-large": 1},
    )
    if sqlite:
        [stale] = stale_checks(cli)
        assert stale["status"] == "warn" and "1 new" in stale["detail"]
    again = cli("update", "--json").json()["collections"][0]
    assert "broken.pdf" in [s["path"] for s in again["skipped"]]
    assert status(cli)["pending"] == [] and docs_info(status(cli))["skipped"] == 3 and stale_checks(cli) == []

    # Fixed: indexed, no longer skipped.
    (docs / "broken.pdf").unlink()
    (docs / "image.md").write_text("# Image notes\n", encoding="utf-8")
    data = status(cli)
    assert data["pending"] == ["docs: 1 new, 0 changed, 0 deleted on disk; run `tansaku update -c docs`"]
    assert docs_info(data)["skipped"] == 1
    assert cli("update").exit_code == 0
    data = status(cli)
    assert data["pending"] == [] and docs_info(data)["documents"] == 2
    assert docs_info(data)["skipped_reasons"] == {"too-large": 1}


def test_a_skip_that_may_pass_next_time_stays_pending(cli, docs: Path, without_pdf_extra):
    report = add(cli, docs)
    reasons = {s["path"]: s["reason"].split(" ", 1)[0] for s in report["skipped"]}
    assert reasons["broken.pdf"] == "extra-missing"
    data = status(cli)
    # Installing the extra may make it readable: update has something to do.
    assert data["pending"] == ["docs: 1 new, 0 changed, 0 deleted on disk; run `tansaku update -c docs`"]
    assert docs_info(data)["skipped_reasons"] == {"binary": 1, "too-large": 1}


def test_raising_the_file_size_limit_makes_a_too_large_file_pending(cli, docs: Path, config_path: Path):
    add(cli, docs)
    assert docs_info(status(cli))["skipped"] == 3
    text = config_path.read_text(encoding="utf-8")
    config_path.write_text(text.replace(f"max_file_bytes = {LIMIT}", f"max_file_bytes = {4 * LIMIT}"))
    data = status(cli)
    assert data["pending"] == ["docs: 3 new, 0 changed, 0 deleted on disk; run `tansaku update -c docs`"]
    assert cli("update").exit_code == 0
    data = status(cli)
    assert data["pending"] == [] and docs_info(data)["skipped_reasons"] == {"binary": 1, "corrupt": 1}


def skipped_rows(index_path: Path) -> int:
    with index_sql(index_path) as conn:
        return conn.execute("SELECT count(*) FROM skipped_files").fetchone()[0]


def test_rename_keeps_and_remove_drops_the_skipped_files(cli, docs: Path, index_path: Path):
    add(cli, docs)
    assert cli("collection", "rename", "docs", "papers").exit_code == 0
    data = status(cli)
    [info] = data["collections"]
    assert data["pending"] == [] and (info["collection"]["name"], info["skipped"]) == ("papers", 3)
    assert skipped_rows(index_path) == 3
    assert cli("collection", "remove", "papers").exit_code == 0
    assert skipped_rows(index_path) == 0


def _as_postgres_schema_6() -> None:
    """The test's PostgreSQL index as schema 6 left it: postings a row each (undo 9), the
    collection list in the config file (undo 8), no skipped_files (undo 7)."""
    from dataclasses import replace

    from tansaku.api import Tansaku
    from tansaku.config import settings

    from .test_postgres_bm25_sql import undo_version_9

    listed = Tansaku().config()
    config_path = Path(os.environ["TANSAKU_CONFIG_DIR"]) / "index.toml"
    url = settings.index_url(settings.load(config_path))
    assert url is not None
    undo_version_9(url)
    with index_sql(Path()) as conn:
        for statement in ("DROP TABLE skipped_files", "DROP TABLE collections", "DROP TABLE contexts"):
            conn.execute(statement)
        conn.execute("UPDATE tansaku_schema SET version = 6")
    in_file = settings.load(config_path)
    settings.save(config_path, replace(in_file, collections=listed.collections, contexts=listed.contexts))


def test_an_index_built_before_the_skipped_files_table_keeps_working(
    cli, docs: Path, index_path: Path, index_backend: str
):
    add(cli, docs)
    # The index as the previous schema left it: no skipped_files table, the version before.
    if index_backend == "postgresql":
        _as_postgres_schema_6()
    else:
        with index_sql(index_path) as conn:
            conn.execute("DROP TABLE skipped_files")
            conn.execute("PRAGMA user_version = 8")
    assert [w["code"] for w in status(cli)["warnings"]] == ["INDEX_SCHEMA_MISMATCH"]
    upgraded = cli("update", "--json")
    assert upgraded.exit_code == 0, upgraded.stderr
    [report] = upgraded.json()["collections"]
    assert report["added"] == [] and report["unchanged"] == 1  # the documents stayed
    data = status(cli)
    assert data["warnings"] == [] and data["pending"] == []
    assert (docs_info(data)["documents"], docs_info(data)["skipped"]) == (1, 3)
    assert cli("search", "indexed", "--json").json()["results"][0]["path"] == "good.md"


def test_a_name_that_is_not_utf8_is_not_pending(cli, docs: Path):
    # Every update skips it (invalid-utf8-name): asking for one more would never end.
    fd = os.open(os.fsencode(docs) + b"/caf\xe9.md", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"# Cafe\n")
    os.close(fd)
    report = add(cli, docs)
    assert "invalid-utf8-name" in [s["reason"] for s in report["skipped"]]
    assert status(cli)["pending"] == []
