"""Collection state changes through the CLI: add, list, show, rename, remove, include/exclude, ls.

Every failing command must leave the config exactly as it was: a half-applied change to the one
file that says what is indexed is worse than the error itself.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import index_sql

pytestmark = pytest.mark.both_backends

# The `cli` fixture's results (conftest.CliResult); not imported so the tests run whether or not
# test/ is a package.
CliResult = Any
Cli = Callable[..., CliResult]
SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "sample"

SAMPLE_FILES = sorted(p.relative_to(SAMPLE).as_posix() for p in SAMPLE.rglob("*.md"))
ISO_UTC = re.compile(r"\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\Z")


def ok_json(result: CliResult) -> object:
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    return result.json()


def failed(result: CliResult, code: str, exit_code: int | None = None) -> dict:
    # README's table: a named thing that does not exist is 1 (not found), other refusals 2.
    if exit_code is None:
        exit_code = 1 if code.endswith("_NOT_FOUND") else 2
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    assert result.stdout == ""
    error = result.error()
    assert error["code"] == code, error
    return error


def folder_digest(root: Path) -> str:
    """Names, contents and mtimes of everything below root: 'untouched' means all three."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(path.relative_to(root).as_posix().encode())
        if path.is_file():
            digest.update(path.read_bytes())
            digest.update(str(path.stat().st_mtime_ns).encode())
    return digest.hexdigest()


def hits(cli: Cli, query: str, *args: str) -> list[tuple[str, str]]:
    data = ok_json(cli("search", query, "--all", "--json", *args))
    return [(h["collection"], h["path"]) for h in data["results"]]  # type: ignore[index]


def make_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A folder with several extensions and a drafts folder, for masks and ignore."""
    return make_tree(
        tmp_path / "mixed",
        {
            "a.md": "# A\nalpha\n",
            "b.txt": "bravo\n",
            "c.rst": "charlie\n",
            "d.org": "delta\n",
            "sub/e.md": "# E\necho\n",
            "sub/f.txt": "foxtrot\n",
            "drafts/g.md": "# G\ngolf\n",
        },
    )


def added(result: CliResult) -> list[str]:
    data = ok_json(result)
    [collection] = data["collections"]  # type: ignore[index]
    return collection["added"]


# --- add ----------------------------------------------------------------------------------------


def test_add_indexes_every_markdown_file_and_prints_counts(cli: Cli, sample: Path) -> None:
    result = cli("collection", "add", sample, "--name", "sample")
    assert result.exit_code == 0, result.stderr
    assert "added 13, updated 0, moved 0, unchanged 0, removed 0, skipped 0" in result.stdout
    info = ok_json(cli("collection", "show", "sample", "--json"))
    assert info["documents"] == len(SAMPLE_FILES) == 13  # type: ignore[index]


def test_add_json_lists_the_added_files(cli: Cli, sample: Path) -> None:
    data = ok_json(cli("collection", "add", sample, "--name", "sample", "--json"))
    assert data["dry_run"] is False  # type: ignore[index]
    assert data["ok"] is True  # type: ignore[index]
    [collection] = data["collections"]  # type: ignore[index]
    assert collection["name"] == "sample"
    assert collection["added"] == SAMPLE_FILES
    assert collection["unchanged"] == 0
    assert collection["skipped"] == []


def test_add_name_defaults_to_the_folder_name(cli: Cli, sample: Path, tmp_path: Path) -> None:
    folder = tmp_path / "Team_notes-2"
    shutil.copytree(sample, folder)
    data = ok_json(cli("collection", "add", folder, "--json"))
    assert data["collections"][0]["name"] == "Team_notes-2"  # type: ignore[index]
    listed = ok_json(cli("collection", "list", "--json"))
    assert [i["collection"]["name"] for i in listed] == ["Team_notes-2"]  # type: ignore[union-attr,index]
    assert listed[0]["collection"]["path"] == str(folder.resolve())  # type: ignore[index]


def test_add_relative_path_resolves_against_cwd(cli: Cli, sample: Path) -> None:
    data = ok_json(cli("collection", "add", "sample", "--json", cwd=sample.parent))
    assert data["collections"][0]["name"] == "sample"  # type: ignore[index]
    info = ok_json(cli("collection", "show", "sample", "--json"))
    assert info["collection"]["path"] == str(sample.resolve())  # type: ignore[index]


def test_add_through_a_symlink_stores_the_real_folder(cli: Cli, sample: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(sample)
    ok_json(cli("collection", "add", link, "--name", "linked", "--json"))
    info = ok_json(cli("collection", "show", "linked", "--json"))
    assert info["collection"]["path"] == str(sample.resolve())  # type: ignore[index]
    assert info["documents"] == 13  # type: ignore[index]


def overlap_warnings(data: Any) -> list[str]:
    return [w["message"] for w in data["warnings"] if w["code"] == "COLLECTION_OVERLAP"]


def test_add_of_a_folder_already_a_collection_warns_and_still_adds(cli: Cli, mixed: Path) -> None:
    ok_json(cli("collection", "add", mixed, "--json"))
    data = ok_json(cli("collection", "add", mixed, "--name", "again", "--json"))
    [message] = overlap_warnings(data)
    assert f"{mixed.resolve()} is already collection 'mixed'" in message
    assert data["collections"][0]["name"] == "again"  # the add happened
    names = [i["collection"]["name"] for i in ok_json(cli("collection", "list", "--json"))]  # type: ignore[union-attr]
    assert names == ["again", "mixed"]


def test_add_of_a_parent_or_child_folder_warns_naming_the_other(cli: Cli, mixed: Path) -> None:
    ok_json(cli("collection", "add", mixed / "sub", "--json"))
    parent = ok_json(cli("collection", "add", mixed, "--json"))
    [message] = overlap_warnings(parent)
    assert "contains collection 'sub'" in message
    child = ok_json(cli("collection", "add", mixed / "drafts", "--json"))
    [message] = overlap_warnings(child)
    assert "is inside collection 'mixed'" in message


def test_overlap_warning_sees_through_a_symlink_and_is_a_cli_line(
    cli: Cli, mixed: Path, tmp_path: Path
) -> None:
    ok_json(cli("collection", "add", mixed, "--json"))
    link = tmp_path / "elsewhere"
    link.symlink_to(mixed / "sub")
    result = cli("collection", "add", link, "--name", "linked")
    assert result.exit_code == 0, result.stderr
    assert "warning [COLLECTION_OVERLAP]:" in result.stdout
    assert "is inside collection 'mixed'" in result.stdout


def test_add_of_an_unrelated_folder_has_no_overlap_warning(cli: Cli, mixed: Path, sample: Path) -> None:
    ok_json(cli("collection", "add", mixed, "--json"))
    assert overlap_warnings(ok_json(cli("collection", "add", sample, "--json"))) == []


@pytest.mark.sqlite_only("expects no config file (the PostgreSQL run has one naming the database)")
def test_add_folder_name_that_is_not_a_valid_name_needs_name(
    cli: Cli, sample: Path, tmp_path: Path, config_path: Path
) -> None:
    folder = tmp_path / "my notes"
    shutil.copytree(sample, folder)
    failed(cli("collection", "add", folder, "--json"), "INVALID_NAME")
    assert not config_path.exists()
    assert added(cli("collection", "add", folder, "--name", "mynotes", "--json")) == SAMPLE_FILES


def test_mask_is_repeatable(cli: Cli, mixed: Path) -> None:
    result = cli("collection", "add", mixed, "--mask", "**/*.md", "--mask", "**/*.txt", "--json")
    assert added(result) == ["a.md", "b.txt", "drafts/g.md", "sub/e.md", "sub/f.txt"]
    info = ok_json(cli("collection", "show", "mixed", "--json"))
    assert info["collection"]["masks"] == ["**/*.md", "**/*.txt"]  # type: ignore[index]


def test_mask_comma_list(cli: Cli, mixed: Path) -> None:
    result = cli("collection", "add", mixed, "--mask", "**/*.md,*.rst", "--json")
    assert added(result) == ["a.md", "c.rst", "drafts/g.md", "sub/e.md"]


def test_mask_brace_group(cli: Cli, mixed: Path) -> None:
    result = cli("collection", "add", mixed, "--mask", "**/*.{md,txt}", "--json")
    assert added(result) == ["a.md", "b.txt", "drafts/g.md", "sub/e.md", "sub/f.txt"]
    # The stored masks are the expanded ones, so the config reads without knowing brace syntax.
    info = ok_json(cli("collection", "show", "mixed", "--json"))
    assert info["collection"]["masks"] == ["**/*.md", "**/*.txt"]  # type: ignore[index]


def test_default_mask_is_markdown_only(cli: Cli, mixed: Path) -> None:
    assert added(cli("collection", "add", mixed, "--json")) == ["a.md", "drafts/g.md", "sub/e.md"]


@pytest.mark.parametrize("pattern", ["drafts", "drafts/**"])
def test_ignore_leaves_out_a_folder(cli: Cli, mixed: Path, pattern: str) -> None:
    result = cli("collection", "add", mixed, "--ignore", pattern, "--json")
    assert added(result) == ["a.md", "sub/e.md"]
    info = ok_json(cli("collection", "show", "mixed", "--json"))
    assert info["collection"]["ignore"] == [pattern]  # type: ignore[index]
    assert hits(cli, "golf") == []
    assert hits(cli, "echo") == [("mixed", "sub/e.md")]


def test_ignore_files_by_glob(cli: Cli, mixed: Path) -> None:
    result = cli("collection", "add", mixed, "--mask", "**/*.{md,txt}", "--ignore", "**/*.txt", "--json")
    assert added(result) == ["a.md", "drafts/g.md", "sub/e.md"]


# --- add: refused, and nothing changes --------------------------------------------------------


def _bad_add_args(case: str, sample: Path, tmp_path: Path) -> list[str]:
    if case == "missing-folder":
        return [str(tmp_path / "no-such-folder"), "--name", "x"]
    if case == "file-not-folder":
        return [str(sample / "README.md"), "--name", "x"]
    if case == "invalid-name":
        return [str(sample), "--name", "bad name!"]
    if case == "bad-glob":
        return [str(sample), "--name", "x", "--mask", "**/*.{md"]
    if case == "bad-ignore-glob":
        return [str(sample), "--name", "x", "--ignore", "[abc"]
    raise AssertionError(case)


BAD_ADDS = [
    ("missing-folder", "PATH_NOT_FOUND"),
    ("file-not-folder", "PATH_NOT_FOUND"),
    ("invalid-name", "INVALID_NAME"),
    ("bad-glob", "BAD_GLOB"),
    ("bad-ignore-glob", "BAD_GLOB"),
]


@pytest.mark.sqlite_only("expects no config file and no SQLite file")
@pytest.mark.parametrize(("case", "code"), BAD_ADDS)
def test_refused_add_on_a_fresh_setup_creates_nothing(
    cli: Cli, sample: Path, tmp_path: Path, config_path: Path, index_path: Path, case: str, code: str
) -> None:
    failed(cli("collection", "add", *_bad_add_args(case, sample, tmp_path), "--json"), code)
    assert not config_path.exists()
    assert not index_path.exists()


@pytest.mark.sqlite_only("compares the SQLite file byte for byte")
@pytest.mark.parametrize(("case", "code"), BAD_ADDS)
def test_refused_add_leaves_the_config_byte_identical(
    cli: Cli,
    sample: Path,
    mixed: Path,
    tmp_path: Path,
    config_path: Path,
    index_path: Path,
    case: str,
    code: str,
) -> None:
    ok_json(cli("collection", "add", mixed, "--json"))
    ok_json(cli("context", "add", "mixed", "a context", "--json"))
    config_before = config_path.read_bytes()
    index_before = index_path.read_bytes()
    failed(cli("collection", "add", *_bad_add_args(case, sample, tmp_path), "--json"), code)
    assert config_path.read_bytes() == config_before
    assert index_path.read_bytes() == index_before


def test_duplicate_name_is_refused_and_the_config_is_unchanged(
    cli: Cli, indexed: Path, mixed: Path, config_path: Path
) -> None:
    before = config_path.read_bytes()
    error = failed(cli("collection", "add", mixed, "--name", "sample", "--json"), "COLLECTION_EXISTS")
    assert str(indexed.resolve()) in error["message"]  # says where the existing one points
    assert config_path.read_bytes() == before
    # The first collection still points at its folder and its documents are still there.
    assert hits(cli, "alpha") == []
    assert ok_json(cli("collection", "show", "sample", "--json"))["documents"] == 13  # type: ignore[index]


def test_bad_glob_names_the_mask(cli: Cli, sample: Path) -> None:
    error = failed(cli("collection", "add", sample, "--mask", "**/*.{md", "--json"), "BAD_GLOB")
    assert "**/*.{md" in error["message"]


# --- add --dry-run --------------------------------------------------------------------------------


@pytest.mark.sqlite_only("expects no config file and no SQLite file")
def test_add_dry_run_lists_files_and_writes_nothing(
    cli: Cli, sample: Path, config_path: Path, index_path: Path
) -> None:
    data = ok_json(cli("collection", "add", sample, "--dry-run", "--json"))
    assert data["dry_run"] is True  # type: ignore[index]
    [collection] = data["collections"]  # type: ignore[index]
    assert collection["name"] == "sample"
    assert collection["added"] == SAMPLE_FILES
    assert not config_path.exists()
    assert not index_path.exists()
    assert not index_path.parent.exists() or list(index_path.parent.iterdir()) == []
    assert ok_json(cli("collection", "list", "--json")) == []


@pytest.mark.sqlite_only("compares the SQLite file byte for byte")
def test_add_dry_run_next_to_an_existing_collection_changes_nothing(
    cli: Cli, indexed: Path, mixed: Path, config_path: Path, index_path: Path
) -> None:
    config_before, index_before = config_path.read_bytes(), index_path.read_bytes()
    result = cli("collection", "add", mixed, "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "dry run: nothing was changed" in result.stdout
    assert "would add: a.md" in result.stdout
    assert config_path.read_bytes() == config_before
    assert index_path.read_bytes() == index_before
    failed(cli("collection", "show", "mixed", "--json"), "COLLECTION_NOT_FOUND")


# --- list / show --------------------------------------------------------------------------------


def test_list_shows_every_collection_sorted(cli: Cli, indexed: Path, mixed: Path) -> None:
    ok_json(cli("collection", "add", mixed, "--name", "aaa", "--json"))
    listed = ok_json(cli("collection", "list", "--json"))
    assert [(i["collection"]["name"], i["documents"]) for i in listed] == [  # type: ignore[union-attr,index]
        ("aaa", 3),
        ("sample", 13),
    ]
    text = cli("collection", "list").stdout
    assert text.splitlines()[0].split() == ["NAME", "TYPE", "DOCS", "PATH", "INCLUDED", "MASKS"]
    assert re.search(r"^sample\s+files\s+13\s", text, re.M)


def test_list_when_there_are_none(cli: Cli) -> None:
    assert ok_json(cli("collection", "list", "--json")) == []
    assert cli("collection", "list").stdout == "(none)\n"


def test_show_has_everything_about_one_collection(cli: Cli, mixed: Path) -> None:
    ok_json(cli("collection", "add", mixed, "--mask", "**/*.{md,txt}", "--ignore", "drafts", "--json"))
    info = ok_json(cli("collection", "show", "mixed", "--json"))
    # The documented keys (docs/formats.md); later features may add more.
    expected = {
        "name": "mixed",
        "path": str(mixed.resolve()),
        "masks": ["**/*.md", "**/*.txt"],
        "ignore": ["drafts"],
        "update": None,
        "include": True,
    }
    assert {k: info["collection"][k] for k in expected} == expected  # type: ignore[index]
    assert info["documents"] == 4  # type: ignore[index]
    assert info["bytes"] == sum(  # type: ignore[index]
        (mixed / p).stat().st_size for p in ("a.md", "b.txt", "sub/e.md", "sub/f.txt")
    )
    assert ISO_UTC.match(info["last_update"])  # type: ignore[index]

    text = cli("collection", "show", "mixed").stdout
    assert re.search(rf"^path:\s+{re.escape(str(mixed.resolve()))}$", text, re.M)
    assert re.search(r"^masks:\s+\*\*/\*\.md, \*\*/\*\.txt$", text, re.M)
    assert re.search(r"^ignore:\s+drafts$", text, re.M)
    assert re.search(r"^update hook:\s+\(none\)$", text, re.M)
    assert re.search(r"^included:\s+yes", text, re.M)
    assert re.search(r"^documents:\s+4$", text, re.M)
    assert re.search(r"^last update:\s+\d{4}-\d\d-\d\d \d\d:\d\d$", text, re.M)


def test_show_reflects_hook_and_exclusion(cli: Cli, indexed: Path) -> None:
    ok_json(cli("collection", "set-update", "sample", "git pull --ff-only", "--json"))
    ok_json(cli("collection", "exclude", "sample", "--json"))
    info = ok_json(cli("collection", "show", "sample", "--json"))
    assert info["collection"]["update"] == "git pull --ff-only"  # type: ignore[index]
    assert info["collection"]["include"] is False  # type: ignore[index]
    text = cli("collection", "show", "sample").stdout
    assert re.search(r"^update hook:\s+git pull --ff-only$", text, re.M)
    assert re.search(r"^included:\s+no", text, re.M)


@pytest.mark.sqlite_only("writes its own config file")
def test_show_before_any_index_exists(cli: Cli, sample: Path, config_path: Path, index_path: Path) -> None:
    # A hand-written config: the collection is known but was never indexed.
    config_path.parent.mkdir(parents=True)
    config_path.write_text(f'[collections.hand]\npath = "{sample}"\n', encoding="utf-8")
    info = ok_json(cli("collection", "show", "hand", "--json"))
    assert info["documents"] == 0  # type: ignore[index]
    assert info["last_update"] is None  # type: ignore[index]
    assert info["collection"]["masks"] == ["**/*.md"]  # type: ignore[index]
    assert not index_path.exists()


# --- rename ---------------------------------------------------------------------------------------


def test_rename_moves_documents_and_contexts(cli: Cli, indexed: Path, config_path: Path) -> None:
    ok_json(cli("context", "add", "sample", "the handbook", "--json"))
    ok_json(cli("context", "add", "sample/guides", "how-to guides", "--json"))
    ok_json(cli("context", "add", "/", "everything", "--json"))
    before = {e["virtual_path"]: e["docid"] for e in ok_json(cli("ls", "sample", "--json"))}  # type: ignore[union-attr,index]

    data = ok_json(cli("collection", "rename", "sample", "handbook", "--json"))
    assert data == {"renamed": "sample", "to": "handbook", "message": "renamed sample to handbook"}

    after = {e["virtual_path"]: e["docid"] for e in ok_json(cli("ls", "handbook", "--json"))}  # type: ignore[union-attr,index]
    assert after == {k.replace("tansaku://sample/", "tansaku://handbook/"): v for k, v in before.items()}

    result = ok_json(cli("search", "snapshots", "-c", "handbook", "--json", "--all"))
    backups = next(h for h in result["results"] if h["path"] == "guides/backups.md")  # type: ignore[index]
    assert backups["collection"] == "handbook"
    assert backups["virtual_path"] == "tansaku://handbook/guides/backups.md"
    assert backups["contexts"] == ["everything", "the handbook", "how-to guides"]

    contexts = ok_json(cli("context", "list", "--json"))
    assert [c["path"] for c in contexts] == ["/", "tansaku://handbook", "tansaku://handbook/guides"]  # type: ignore[union-attr,index]
    assert "sample" not in config_path.read_text(encoding="utf-8").replace(str(indexed), "")

    # The documents were carried over, not re-indexed: an update finds nothing to do.
    update = ok_json(cli("update", "--json"))
    [only] = update["collections"]  # type: ignore[index]
    assert (only["name"], only["unchanged"], only["added"], only["removed"]) == ("handbook", 13, [], [])


def test_old_name_is_gone_after_rename(cli: Cli, indexed: Path) -> None:
    ok_json(cli("collection", "rename", "sample", "handbook", "--json"))
    failed(cli("collection", "show", "sample", "--json"), "COLLECTION_NOT_FOUND")
    failed(cli("search", "backups", "-c", "sample", "--json"), "COLLECTION_NOT_FOUND")
    failed(cli("ls", "sample", "--json"), "COLLECTION_NOT_FOUND")
    assert {c for c, _ in hits(cli, "snapshots")} == {"handbook"}


def test_rename_only_moves_that_collections_contexts(cli: Cli, indexed: Path, mixed: Path) -> None:
    # "sample-2" starts with "sample": a prefix test on strings would carry its context along.
    ok_json(cli("collection", "add", mixed, "--name", "sample-2", "--json"))
    ok_json(cli("context", "add", "sample-2", "other one", "--json"))
    ok_json(cli("context", "add", "sample", "first one", "--json"))
    ok_json(cli("collection", "rename", "sample", "handbook", "--json"))
    contexts = ok_json(cli("context", "list", "--json"))
    assert {c["path"]: c["text"] for c in contexts} == {  # type: ignore[union-attr,index]
        "tansaku://handbook": "first one",
        "tansaku://sample-2": "other one",
    }


def test_rename_refusals_change_nothing(cli: Cli, indexed: Path, mixed: Path, config_path: Path) -> None:
    ok_json(cli("collection", "add", mixed, "--json"))
    before = config_path.read_bytes()
    failed(cli("collection", "rename", "sample", "mixed", "--json"), "COLLECTION_EXISTS")
    failed(cli("collection", "rename", "sample", "bad name!", "--json"), "INVALID_NAME")
    failed(cli("collection", "rename", "nope", "fresh", "--json"), "COLLECTION_NOT_FOUND")
    assert config_path.read_bytes() == before
    assert {c for c, _ in hits(cli, "snapshots")} == {"sample"}


# --- remove ---------------------------------------------------------------------------------------


def test_remove_drops_documents_but_not_files(cli: Cli, indexed: Path, mixed: Path) -> None:
    ok_json(cli("collection", "add", mixed, "--json"))
    ok_json(cli("context", "add", "/", "global", "--json"))
    ok_json(cli("context", "add", "sample", "sample ctx", "--json"))
    ok_json(cli("context", "add", "sample/zh", "chinese", "--json"))
    ok_json(cli("context", "add", "mixed", "mixed ctx", "--json"))
    digest = folder_digest(indexed)
    assert hits(cli, "snapshots")

    data = ok_json(cli("collection", "remove", "sample", "--json"))
    assert data["removed"] == "sample"  # type: ignore[index]
    assert data["documents"] == 13  # type: ignore[index]

    assert folder_digest(indexed) == digest
    assert hits(cli, "snapshots") == []
    assert hits(cli, "alpha") == [("mixed", "a.md")]
    failed(cli("ls", "sample", "--json"), "COLLECTION_NOT_FOUND")
    assert [i["collection"]["name"] for i in ok_json(cli("ls", "--json"))] == ["mixed"]  # type: ignore[union-attr,index]
    contexts = ok_json(cli("context", "list", "--json"))
    assert {c["path"] for c in contexts} == {"/", "tansaku://mixed"}  # type: ignore[union-attr,index]


def test_remove_deletes_the_index_rows(cli: Cli, indexed: Path, index_path: Path) -> None:
    ok_json(cli("collection", "remove", "sample", "--json"))
    with index_sql(index_path) as conn:
        for table in ("documents", "content", "collection_state"):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


def test_remove_then_add_again_starts_fresh(cli: Cli, indexed: Path) -> None:
    ok_json(cli("collection", "remove", "sample", "--json"))
    assert added(cli("collection", "add", indexed, "--name", "sample", "--json")) == SAMPLE_FILES


def test_remove_unknown_changes_nothing(cli: Cli, indexed: Path, config_path: Path) -> None:
    before = config_path.read_bytes()
    failed(cli("collection", "remove", "nope", "--json"), "COLLECTION_NOT_FOUND")
    assert config_path.read_bytes() == before


# --- include / exclude ------------------------------------------------------------------------------


def test_excluded_collection_is_searched_only_when_named(cli: Cli, indexed: Path, mixed: Path) -> None:
    ok_json(cli("collection", "add", mixed, "--json"))
    (mixed / "snap.md").write_text("# Snap\nsnapshots here too\n", encoding="utf-8")
    ok_json(cli("update", "--json"))
    assert {c for c, _ in hits(cli, "snapshots")} == {"sample", "mixed"}

    data = ok_json(cli("collection", "exclude", "sample", "--json"))
    assert data["include"] is False  # type: ignore[index]

    result = ok_json(cli("search", "snapshots", "--json", "--all"))
    assert {h["collection"] for h in result["results"]} == {"mixed"}  # type: ignore[index]
    assert result["collections"] == ["mixed"]  # type: ignore[index]
    warning = next(w for w in result["warnings"] if w["code"] == "EXCLUDED_COLLECTIONS")  # type: ignore[index]
    assert "sample" in warning["message"]

    named = ok_json(cli("search", "snapshots", "-c", "sample", "--json", "--all"))
    assert named["results"] and {h["collection"] for h in named["results"]} == {"sample"}  # type: ignore[index]
    assert named["warnings"] == []  # type: ignore[index]

    listed = ok_json(cli("collection", "list", "--json"))
    assert {i["collection"]["name"]: i["collection"]["include"] for i in listed} == {  # type: ignore[union-attr,index]
        "mixed": True,
        "sample": False,
    }

    ok_json(cli("collection", "include", "sample", "--json"))
    again = ok_json(cli("search", "snapshots", "--json", "--all"))
    assert {h["collection"] for h in again["results"]} == {"sample", "mixed"}  # type: ignore[index]
    assert again["warnings"] == []  # type: ignore[index]


def test_exclusion_survives_an_update(cli: Cli, indexed: Path) -> None:
    ok_json(cli("collection", "exclude", "sample", "--json"))
    ok_json(cli("update", "--json"))
    assert ok_json(cli("collection", "show", "sample", "--json"))["collection"]["include"] is False  # type: ignore[index]
    assert hits(cli, "snapshots") == []


# --- ls ---------------------------------------------------------------------------------------------


def test_ls_without_arguments_lists_collections(cli: Cli, indexed: Path) -> None:
    data = ok_json(cli("ls", "--json"))
    assert data == ok_json(cli("collection", "list", "--json"))
    assert [(i["collection"]["name"], i["documents"]) for i in data] == [("sample", 13)]  # type: ignore[union-attr,index]


def test_ls_collection_lists_its_files(cli: Cli, indexed: Path) -> None:
    entries = ok_json(cli("ls", "sample", "--json"))
    assert [e["virtual_path"] for e in entries] == [f"tansaku://sample/{p}" for p in SAMPLE_FILES]  # type: ignore[union-attr,index]
    backups = next(e for e in entries if e["virtual_path"].endswith("guides/backups.md"))  # type: ignore[union-attr,index]
    assert backups["title"] == "Nightly backups"
    assert backups["size"] == (indexed / "guides" / "backups.md").stat().st_size
    assert re.fullmatch(r"#[0-9a-f]{6}", backups["docid"])
    assert ISO_UTC.match(backups["modified"])


@pytest.mark.parametrize("target", ["sample/zh", "sample/zh/", "tansaku://sample/zh", "/sample/zh"])
def test_ls_sub_folder(cli: Cli, indexed: Path, target: str) -> None:
    entries = ok_json(cli("ls", target, "--json"))
    assert [e["virtual_path"] for e in entries] == [  # type: ignore[union-attr,index]
        "tansaku://sample/zh/压缩.md",
        "tansaku://sample/zh/恢复.md",
        "tansaku://sample/zh/权限.md",
    ]
    assert [e["title"] for e in entries] == ["压缩设置", "恢复文件", "文件权限"]  # type: ignore[union-attr,index]


def test_ls_prefix_is_whole_segments(cli: Cli, indexed: Path) -> None:
    (indexed / "guidesX").mkdir()
    (indexed / "guidesX" / "x.md").write_text("# X\n", encoding="utf-8")
    ok_json(cli("update", "--json"))
    assert len(ok_json(cli("ls", "sample/guides", "--json"))) == 3  # type: ignore[arg-type]
    assert ok_json(cli("ls", "sample/guid", "--json")) == []


def test_ls_cli_text(cli: Cli, indexed: Path) -> None:
    text = cli("ls", "sample/zh").stdout
    lines = text.splitlines()
    assert len(lines) == 3
    assert all(re.search(r"#[0-9a-f]{6}\s+tansaku://sample/zh/\S+\.md$", line) for line in lines)


# --- unknown collection -----------------------------------------------------------------------------

UNKNOWN = [
    ("collection", "show", "nope"),
    ("collection", "rename", "nope", "other"),
    ("collection", "remove", "nope"),
    ("collection", "include", "nope"),
    ("collection", "exclude", "nope"),
    ("collection", "set-update", "nope", "echo hi"),
    ("collection", "set-update", "nope"),
    ("ls", "nope"),
    ("ls", "nope/sub"),
    ("ls", "tansaku://nope/sub"),
    ("search", "backups", "-c", "nope"),
    ("search", "backups", "-c", "sample", "-c", "nope"),
    ("update", "-c", "nope"),
    ("update", "-c", "nope", "--dry-run"),
    ("update", "-c", "sample", "-c", "nope"),
    ("context", "add", "tansaku://nope/sub", "text"),
]


@pytest.mark.sqlite_only("compares the SQLite file byte for byte")
@pytest.mark.parametrize("args", UNKNOWN, ids=" ".join)
def test_unknown_collection_is_reported_and_nothing_changes(
    cli: Cli, indexed: Path, config_path: Path, index_path: Path, args: tuple[str, ...]
) -> None:
    config_before, index_before = config_path.read_bytes(), index_path.read_bytes()
    error = failed(cli(*args, "--json"), "COLLECTION_NOT_FOUND")
    assert "nope" in error["message"]
    assert config_path.read_bytes() == config_before
    assert index_path.read_bytes() == index_before


def test_unknown_collection_message_lists_the_known_ones(cli: Cli, indexed: Path) -> None:
    error = failed(cli("collection", "show", "nope", "--json"), "COLLECTION_NOT_FOUND")
    assert "sample" in error["message"]
    plain = cli("collection", "show", "nope")
    assert plain.exit_code == 1
    assert plain.stderr.startswith("error: ")
    assert plain.stdout == ""


def test_admin_commands_refuse_other_formats(cli: Cli, indexed: Path) -> None:
    result = cli("collection", "list", "--format", "csv")
    assert result.exit_code == 2
    assert result.stdout == ""


def test_collection_add_keeps_files_on_disk_untouched(cli: Cli, sample: Path) -> None:
    digest = folder_digest(sample)
    ok_json(cli("collection", "add", sample, "--json"))
    assert folder_digest(sample) == digest
    assert not any(p.name.startswith(".") for p in sample.rglob("*")), os.listdir(sample)


def test_config_writes_leave_no_temporary_files(cli: Cli, indexed: Path, config_path: Path) -> None:
    for args in (
        ("collection", "exclude", "sample"),
        ("collection", "set-update", "sample", "true"),
        ("context", "add", "/", "global"),
        ("collection", "rename", "sample", "renamed"),
    ):
        ok_json(cli(*args, "--json"))
    assert [p.name for p in config_path.parent.iterdir()] == [config_path.name]
