"""Front-matter fields end to end: parsed at update, `--where` on search, vsearch and query,
`--fields` in every output format (a real index, real FTS5, the CLI in-process)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from .conftest import index_sql

pytestmark = pytest.mark.both_backends

REPO = Path(__file__).resolve().parent.parent
FIELDS = REPO / "fixtures" / "fields"
WORD = "garden"  # in every note of the fixture


@pytest.fixture
def garden(cli, tmp_path: Path) -> Path:
    target = tmp_path / "garden"
    shutil.copytree(FIELDS, target)
    result = cli("collection", "add", target, "--name", "garden", "--json")
    assert result.exit_code == 0, result.stderr
    return target


def paths(cli, *args: str) -> set[str]:
    result = cli("search", WORD, "--all", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return {Path(hit["path"]).stem for hit in result.json()["results"]}


def test_broken_front_matter_is_a_warning_naming_file_and_line_never_a_failed_update(cli, tmp_path: Path):
    target = tmp_path / "garden"
    shutil.copytree(FIELDS, target)
    result = cli("collection", "add", target, "--name", "garden", "--json")
    assert result.exit_code == 0, result.stderr
    report = result.json()
    assert report["ok"] is True
    warnings = report["collections"][0]["warnings"]
    assert [w["code"] for w in warnings] == ["FRONT_MATTER_INVALID"]
    assert warnings[0]["message"].startswith("notes/broken.md:4: front matter is not valid YAML")
    assert "starts on line 3" in warnings[0]["message"]
    assert "notes/broken.md" in report["collections"][0]["added"]  # indexed, without fields
    assert "broken" in paths(cli)
    text = cli("update").stdout  # unchanged files are not read again: no warning twice
    assert "FRONT_MATTER_INVALID" not in text
    (target / "notes" / "broken.md").write_text("---\ntags: [fixed]\n---\n\ngarden\n", encoding="utf-8")
    assert cli("update", "--json").json()["collections"][0]["warnings"] == []
    assert paths(cli, "--where", "tags=fixed") == {"broken"}


def test_the_text_summary_names_the_file_and_line(cli, tmp_path: Path):
    target = tmp_path / "garden"
    shutil.copytree(FIELDS, target)
    text = cli("collection", "add", target, "--name", "garden").stdout
    assert "warning [FRONT_MATTER_INVALID]: notes/broken.md:4: front matter is not valid YAML" in text


@pytest.mark.usefixtures("garden")
@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        (["tags=python"], {"alpha", "gamma", "epsilon"}),  # a list matches any element; any case
        (["tags=Search"], {"alpha", "beta"}),
        (["tags=python", "status=published"], {"gamma"}),  # AND across flags
        (["status=draft"], {"alpha"}),
        (["status!=draft"], {"beta", "gamma", "epsilon", "delta", "broken"}),
        (["tags!=python"], {"beta", "delta", "broken"}),
        (["date>=2024-06-01"], {"beta", "gamma"}),
        (["date>2024-06-15"], {"gamma"}),
        (["date<=2024-06-15"], {"alpha", "beta"}),
        (["date<2024-06-15"], {"alpha"}),
        (["date=2024-06-15"], {"beta"}),
        (["updated<=2024-06-15"], {"epsilon"}),  # a date-time counts by its day
        (["updated>=2024-06-16"], set()),
        (["priority>=2"], {"alpha", "beta"}),
        (["priority<2"], {"gamma"}),
        (["priority=5"], {"beta"}),
        (["priority=5.0"], {"beta"}),
        (["author.name=aiko"], {"alpha"}),  # a mapping's fields are dotted names
        (["draft=true"], {"epsilon"}),
        (["TAGS=compost"], {"gamma"}),  # names match without regard to case too
        (["title='Beta harvest log'"], {"beta"}),
        (["nothing=here"], set()),
    ],
)
def test_where_filters_on_fields(cli, conditions: list[str], expected: set[str]):
    args = [arg for condition in conditions for arg in ("--where", condition)]
    assert paths(cli, *args) == expected


@pytest.mark.usefixtures("garden")
def test_the_filter_applies_before_the_limit(cli):
    everything = cli("search", WORD, "--all", "--json").json()["results"]
    last = Path(everything[-1]["path"]).stem
    assert last in {"alpha", "beta", "gamma", "epsilon"}, "the fixture's ranking changed"
    data = cli("search", WORD, "-n", "1", "--json", "--where", f"title={everything[-1]['title']}").json()
    assert [Path(hit["path"]).stem for hit in data["results"]] == [last]
    data = cli("search", WORD, "-n", "1", "--json", "--where", "tags=python").json()
    assert len(data["results"]) == 1 and data["total"] == 3  # the count is of the filtered documents
    data = cli("search", WORD, "-n", "2", "--json", "--where", "tags=python").json()
    assert len(data["results"]) == 2


@pytest.mark.usefixtures("garden")
def test_no_match_is_no_results_not_an_error(cli):
    result = cli("search", WORD, "--where", "status=archived")
    assert result.exit_code == 0
    assert result.stdout == "No results.\n"


@pytest.mark.usefixtures("garden")
@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("tags", "no FIELD, operator and VALUE"),
        ("=python", "no FIELD, operator and VALUE"),
        ("tags=", "has no value"),
        ("date>=soon", "compares dates (YYYY-MM-DD) or numbers"),
        ("date>=2024-13-01", "is not a date"),
        ("tags<python", "compares dates (YYYY-MM-DD) or numbers"),
    ],
)
def test_bad_where_syntax_is_a_clear_usage_error(cli, condition: str, message: str):
    for command in ("search", "query"):
        result = cli(
            command, WORD, "--where", condition, "--json", "--no-rerank" if command == "query" else "-n3"
        )
        assert result.exit_code == 2, result.stdout
        error = result.error()
        assert error["code"] == "USAGE" and message in error["message"]
        assert "FIELD=VALUE" in error["hint"]
    text = cli("search", WORD, "--where", condition)
    assert text.exit_code == 2 and text.stderr.startswith("error: ") and "Traceback" not in text.stderr


@pytest.mark.usefixtures("garden")
def test_fields_shows_each_documents_fields_with_their_types(cli):
    data = cli("search", WORD, "--all", "--json", "--fields").json()
    shown = {Path(hit["path"]).stem: hit["fields"] for hit in data["results"]}
    assert shown["alpha"] == {
        "title": "Alpha planting plan",
        "tags": ["python", "search"],
        "date": "2024-03-01",
        "status": "draft",
        "priority": 2,
        "author.name": "Aiko",
    }
    assert shown["epsilon"] == {
        "title": "Epsilon tool shed",
        "tags": "Python",
        "updated": "2024-06-15T10:30:00+00:00",
        "draft": True,
    }
    assert shown["gamma"]["tags"] == ["python", "compost"] and shown["gamma"]["date"] == "2025-01-10"
    assert shown["delta"] == {} and shown["broken"] == {}
    assert "fields" not in cli("search", WORD, "--json").json()["results"][0]  # only when asked


@pytest.mark.usefixtures("garden")
def test_query_takes_where_and_fields(cli):
    result = cli("query", WORD, "--no-expand", "--no-rerank", "--json", "--where", "tags=python", "--fields")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert {Path(hit["path"]).stem for hit in data["results"]} == {"alpha", "gamma", "epsilon"}
    assert all("python" in str(hit["fields"]["tags"]).lower() for hit in data["results"])
    packed = cli("query", WORD, "--no-expand", "--no-rerank", "--pack", "--json", "--where", "status=draft")
    assert packed.exit_code == 0, packed.stderr
    assert {item["path"] for item in packed.json()["items"]} == {"notes/alpha.md"}
    refused = cli("query", WORD, "--pack", "--fields", "--json")
    assert refused.exit_code == 2 and "--fields" in refused.error()["message"]


@pytest.mark.parametrize("fmt", ["cli", "json", "csv", "md", "xml", "files"])
def test_every_format_renders_fields(cli, fmt, snapshot, garden: Path):
    result = cli(
        "search", WORD, "--format", fmt, "--fields", "--where", "tags=python", "--where", "date>=2024-01-01"
    )
    assert result.exit_code == 0, result.stderr
    text = re.sub(r'("took_ms": )[0-9.]+', r"\g<1>0", result.stdout)
    text = re.sub(r'took_ms="[0-9.]+"', 'took_ms="0"', text)
    assert text.replace(str(garden), "/GARDEN") == snapshot


def _field_rows(index_path: Path) -> list[tuple[str, str]]:
    with index_sql(index_path) as conn:
        rows = conn.execute(
            "SELECT d.path, f.value FROM document_fields AS f LEFT JOIN documents AS d ON d.id = f.doc_id"
            " WHERE f.name = 'title' ORDER BY f.value"
        ).fetchall()
    return [(row[0], row[1]) for row in rows]


def test_fields_follow_their_text_through_moves_changes_and_deletions(cli, garden: Path, index_path: Path):
    (garden / "notes" / "beta.md").rename(garden / "notes" / "beta-moved.md")
    (garden / "notes" / "alpha.md").unlink()
    gamma = garden / "notes" / "gamma.md"
    gamma.write_text(gamma.read_text(encoding="utf-8").replace('"compost"]', '"winter"]'), encoding="utf-8")
    report = cli("update", "--json").json()["collections"][0]
    assert report["moved"] == [["notes/beta.md", "notes/beta-moved.md"]]
    assert report["removed"] == ["notes/alpha.md"] and report["updated"] == ["notes/gamma.md"]
    assert paths(cli, "--where", "tags=rust") == {"beta-moved"}
    assert paths(cli, "--where", "tags=winter") == {"gamma"}
    assert paths(cli, "--where", "tags=compost") == set()
    # Every stored field belongs to a document: the removed and replaced texts took theirs along.
    assert _field_rows(index_path) == [
        ("notes/beta-moved.md", "Beta harvest log"),
        ("notes/epsilon.md", "Epsilon tool shed"),
        ("notes/gamma.md", "Gamma compost notes"),
    ]
    assert cli("collection", "remove", "garden").exit_code == 0
    assert _field_rows(index_path) == []


@pytest.mark.sqlite_only("downgrades the SQLite file's schema")
def test_an_index_from_before_fields_is_upgraded_and_read_again(cli, garden: Path, index_path: Path):
    import sqlean

    conn = sqlean.connect(str(index_path), isolation_level=None)
    conn.execute("DROP TABLE document_fields")
    conn.execute("DROP TABLE extractions")  # schema 8, after the fields' 7
    conn.execute("DROP TABLE skipped_files")  # schema 9
    conn.execute("PRAGMA user_version = 6")
    conn.execute("UPDATE collection_state SET indexer_version = 5")
    conn.close()
    error = cli("search", WORD, "--json")
    assert error.exit_code != 0 and error.error()["code"] == "INDEX_SCHEMA_MISMATCH"
    report = cli("update", "--json").json()["collections"][0]
    assert len(report["updated"]) == 7 and report["unchanged"] == 0  # every file read once more
    assert paths(cli, "--where", "tags=python") == {"alpha", "gamma", "epsilon"}
    assert cli("update", "--json").json()["collections"][0]["unchanged"] == 7


def test_only_markdown_front_matter_is_read(cli, tmp_path: Path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "a.md").write_text("---\nkind: note\n---\n\nmixed words\n", encoding="utf-8")
    (folder / "b.txt").write_text("---\nkind: note\n---\n\nmixed words\n\nmore\n", encoding="utf-8")
    (folder / "c.txt").write_text("---\nnot yaml: [\n---\n\nmixed words\n", encoding="utf-8")
    result = cli(
        "collection", "add", folder, "--name", "mixed", "--mask", "**/*.md", "--mask", "**/*.txt", "--json"
    )
    assert result.exit_code == 0 and result.json()["collections"][0]["warnings"] == []
    hits = cli("search", "mixed", "--json", "--where", "kind=note").json()["results"]
    assert [hit["path"] for hit in hits] == ["a.md"]


@pytest.mark.sqlite_only("transcript collections are not on PostgreSQL yet")
def test_where_leaves_transcript_collections_out_and_says_so(cli, garden: Path, tmp_path: Path):
    transcripts = REPO / "fixtures" / "transcripts" / "claude"
    shutil.copytree(transcripts, tmp_path / "claude")
    assert cli("collection", "add", "--type", "claude", tmp_path / "claude").exit_code == 0
    for command in (("search", WORD), ("query", WORD, "--no-expand", "--no-rerank")):
        data = cli(*command, "--json", "--where", "tags=python").json()
        assert {hit["collection"] for hit in data["results"]} == {"garden"}
        notices = [w for w in data["warnings"] if w["code"] == "WHERE_FILES_ONLY"]
        assert len(notices) == 1 and notices[0]["message"].endswith("not searched: claude")
    assert not any(w["code"] == "WHERE_FILES_ONLY" for w in cli("search", WORD, "--json").json()["warnings"])
    refused = cli("search", WORD, "-c", "claude", "--where", "tags=python", "--json")
    assert refused.exit_code == 2 and "transcript collections (claude)" in refused.error()["message"]


@pytest.mark.usefixtures("garden")
def test_transcript_options_on_file_collections_keep_the_filter(cli):
    for command in (("search", WORD), ("query", WORD, "--no-expand", "--no-rerank")):
        data = cli(*command, "--json", "--all", "--level", "session", "--where", "tags=rust").json()
        assert [Path(hit["path"]).stem for hit in data["results"]] == ["beta"], command


@pytest.mark.sqlite_only("transcript collections are not on PostgreSQL yet")
def test_fields_on_a_search_of_files_and_transcripts(cli, garden: Path, tmp_path: Path):
    shutil.copytree(REPO / "fixtures" / "transcripts" / "claude", tmp_path / "claude")
    assert cli("collection", "add", "--type", "claude", tmp_path / "claude").exit_code == 0
    data = cli("search", WORD, "--all", "--json", "--fields").json()
    assert data["results"] and all("fields" in hit for hit in data["results"])
    by_path = {hit["path"]: hit["fields"] for hit in data["results"] if hit["collection"] == "garden"}
    assert by_path["notes/beta.md"]["tags"] == ["rust", "search"]


def test_a_snippet_skips_toml_front_matter_as_it_does_yaml(cli, tmp_path: Path):
    folder = tmp_path / "hugo"
    folder.mkdir()
    (folder / "pathonly.md").write_text(
        '+++\ntitle = "T"\ndraft = false\n+++\n\nThe body.\n', encoding="utf-8"
    )
    (folder / "yamlonly.md").write_text("---\ntitle: T\ndraft: false\n---\n\nThe body.\n", encoding="utf-8")
    assert cli("collection", "add", folder, "--name", "hugo").exit_code == 0
    for word in ("pathonly", "yamlonly"):  # in the file name only: the snippet is the start of the body
        hit = cli("search", word, "--json").json()["results"][0]
        assert hit["snippet"] == {"start_line": 6, "lines": ["The body."]}, hit
