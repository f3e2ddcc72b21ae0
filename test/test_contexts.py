"""Contexts through the CLI: the ways to name a path, their order, what search returns, check."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.both_backends

# The `cli` fixture's results (conftest.CliResult); not imported so the tests run whether or not
# test/ is a package.
CliResult = Any
Cli = Callable[..., CliResult]


def ok_json(result: CliResult) -> Any:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stderr == ""
    return result.json()


def failed(result: CliResult, code: str, exit_code: int) -> dict:
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    assert result.stdout == ""
    error = result.error()
    assert error["code"] == code, error
    return error


def add(cli: Cli, *args: str, cwd: Path | None = None) -> str:
    """Add a context and return the key it was stored under."""
    data = ok_json(cli("context", "add", *args, "--json", cwd=cwd))
    assert data["text"] == args[-1].strip()
    return data["path"]


def listed(cli: Cli) -> list[tuple[str, str]]:
    return [(c["path"], c["text"]) for c in ok_json(cli("context", "list", "--json"))]


def contexts_of(cli: Cli, query: str, path: str) -> list[str]:
    data = ok_json(cli("search", query, "--all", "--json", "-c", "sample"))
    [hit] = [h for h in data["results"] if h["path"] == path]
    return hit["contexts"]


def missing(cli: Cli) -> list[str]:
    return ok_json(cli("context", "check", "--json"))["missing"]


# --- naming the path ------------------------------------------------------------------------------


def test_global_context(cli: Cli, indexed: Path) -> None:
    assert add(cli, "/", "All my notes") == "/"
    assert listed(cli) == [("/", "All my notes")]


@pytest.mark.parametrize(
    "raw",
    ["sample/guides", "sample/guides/", "/sample/guides", "sample//guides", "tansaku://sample/guides"],
)
def test_collection_relative_and_virtual_paths(cli: Cli, indexed: Path, tmp_path: Path, raw: str) -> None:
    # cwd where "sample/..." is not a folder, so only the collection-name reading applies.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert add(cli, raw, "How-to guides", cwd=elsewhere) == "tansaku://sample/guides"


def test_virtual_path_to_a_sub_folder(cli: Cli, indexed: Path) -> None:
    assert add(cli, "tansaku://sample/zh", "Chinese pages") == "tansaku://sample/zh"


def test_collection_name_alone(cli: Cli, indexed: Path, tmp_path: Path) -> None:
    assert add(cli, "sample", "The sample", cwd=tmp_path / "home") == "tansaku://sample"


def test_dot_inside_the_collection_folder(cli: Cli, indexed: Path) -> None:
    assert add(cli, ".", "Meeting notes", cwd=indexed / "notes") == "tansaku://sample/notes"
    assert add(cli, ".", "The root", cwd=indexed) == "tansaku://sample"


def test_single_argument_means_the_current_folder(cli: Cli, indexed: Path) -> None:
    assert add(cli, "Reference pages", cwd=indexed / "reference") == "tansaku://sample/reference"
    assert listed(cli) == [("tansaku://sample/reference", "Reference pages")]


def test_filesystem_path_inside_the_collection(cli: Cli, indexed: Path, tmp_path: Path) -> None:
    assert add(cli, str(indexed / "zh"), "Chinese", cwd=tmp_path) == "tansaku://sample/zh"
    assert add(cli, "../guides", "Guides", cwd=indexed / "notes") == "tansaku://sample/guides"


def test_sibling_folder_with_a_longer_name_is_not_inside(cli: Cli, indexed: Path) -> None:
    # "/x/sample-old" starts with "/x/sample" as a string but is not inside it.
    sibling = indexed.parent / (indexed.name + "-old")
    sibling.mkdir()
    failed(cli("context", "add", ".", "text", "--json", cwd=sibling), "COLLECTION_NOT_FOUND", 1)


def test_nested_collections_the_deepest_root_wins(cli: Cli, indexed: Path) -> None:
    # Named to sort after "sample", so the first match in config order is the outer one.
    ok_json(cli("collection", "add", indexed / "guides", "--name", "zz-guides", "--json"))
    assert add(cli, ".", "inner", cwd=indexed / "guides") == "tansaku://zz-guides"
    assert add(cli, ".", "outer", cwd=indexed / "notes") == "tansaku://sample/notes"


def test_adding_again_replaces_the_text(cli: Cli, indexed: Path) -> None:
    add(cli, "sample/guides", "old words")
    add(cli, "tansaku://sample/guides", "  new words  ")
    assert listed(cli) == [("tansaku://sample/guides", "new words")]


def test_empty_text_is_refused(cli: Cli, indexed: Path, config_path: Path) -> None:
    before = config_path.read_bytes()
    failed(cli("context", "add", "sample", "   ", "--json"), "USAGE", 2)
    failed(cli("context", "add", "a", "b", "c", "--json"), "USAGE", 2)
    assert config_path.read_bytes() == before


def test_path_outside_every_collection_is_refused(
    cli: Cli, indexed: Path, tmp_path: Path, config_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    before = config_path.read_bytes()
    error = failed(cli("context", "add", str(outside), "text", "--json"), "COLLECTION_NOT_FOUND", 1)
    assert str(outside) in error["message"]
    assert "not inside any collection" in error["message"]
    failed(cli("context", "add", ".", "text", "--json", cwd=outside), "COLLECTION_NOT_FOUND", 1)
    failed(cli("context", "add", "text", "--json", cwd=outside), "COLLECTION_NOT_FOUND", 1)
    error = failed(cli("context", "add", "nowhere/sub", "text", "--json", cwd=outside), "USAGE", 2)
    assert "nowhere/sub" in error["message"]
    assert config_path.read_bytes() == before


def test_path_escaping_the_collection_is_refused(cli: Cli, indexed: Path, tmp_path: Path) -> None:
    failed(cli("context", "add", "tansaku://sample/../x", "text", "--json", cwd=tmp_path), "USAGE", 2)
    failed(cli("context", "add", "sample/../x", "text", "--json", cwd=tmp_path), "USAGE", 2)


def test_context_on_a_folder_that_does_not_exist_yet(cli: Cli, indexed: Path, tmp_path: Path) -> None:
    # A virtual path need not exist on disk: a context may be set before the folder is filled.
    assert add(cli, "sample/later", "for later", cwd=tmp_path) == "tansaku://sample/later"


# --- order ---------------------------------------------------------------------------------------------


def test_list_is_most_general_first(cli: Cli, indexed: Path) -> None:
    add(cli, "tansaku://sample/zh", "zh")
    add(cli, "sample/guides", "guides")
    add(cli, "sample", "collection")
    add(cli, "/", "global")
    assert [p for p, _ in listed(cli)] == [
        "/",
        "tansaku://sample",
        "tansaku://sample/guides",
        "tansaku://sample/zh",
    ]
    text = cli("context", "list").stdout
    assert text.splitlines() == [
        "/ (global) → global",
        "tansaku://sample → collection",
        "tansaku://sample/guides → guides",
        "tansaku://sample/zh → zh",
    ]


def test_search_results_carry_contexts_most_general_first(cli: Cli, indexed: Path) -> None:
    (indexed / "guides" / "deep").mkdir()
    (indexed / "guides" / "deep" / "d.md").write_text("# Deep\nsnapshots deep down\n", encoding="utf-8")
    assert ok_json(cli("update", "--json"))["ok"]
    # Added out of order on purpose.
    add(cli, "sample/guides/deep", "deep")
    add(cli, "sample/guides", "guides")
    add(cli, "/", "global")
    add(cli, "sample", "collection")
    add(cli, "sample/notes", "notes")

    assert contexts_of(cli, "ninety", "guides/backups.md") == ["global", "collection", "guides"]
    assert contexts_of(cli, "snapshots", "guides/deep/d.md") == ["global", "collection", "guides", "deep"]
    assert contexts_of(cli, "tests", "README.md") == ["global", "collection"]


@pytest.mark.sqlite_only("writes its own config file")
def test_hand_edited_contexts_in_any_order(cli: Cli, indexed: Path, config_path: Path) -> None:
    # The file is for people too: its order must not decide the order of the results.
    config_path.write_text(
        f'[collections.sample]\npath = "{indexed}"\n\n[contexts]\n'
        '"tansaku://sample/guides" = "guides"\n"tansaku://sample" = "collection"\n"/" = "global"\n',
        encoding="utf-8",
    )
    assert [p for p, _ in listed(cli)] == ["/", "tansaku://sample", "tansaku://sample/guides"]
    assert contexts_of(cli, "ninety", "guides/backups.md") == ["global", "collection", "guides"]


def test_contexts_also_come_with_get(cli: Cli, indexed: Path) -> None:
    add(cli, "/", "global")
    add(cli, "sample/guides", "guides")
    got = ok_json(cli("get", "sample/guides/backups.md", "--json"))
    assert got["contexts"] == ["global", "guides"]


def test_folder_context_does_not_leak_to_a_similar_name(cli: Cli, indexed: Path) -> None:
    (indexed / "guidesX").mkdir()
    (indexed / "guidesX" / "other.md").write_text("# Other\nsnapshots elsewhere\n", encoding="utf-8")
    (indexed / "guides.md").write_text("# Guides index\nsnapshots index\n", encoding="utf-8")
    assert ok_json(cli("update", "--json"))["ok"]
    add(cli, "sample/guides", "guides only")
    assert contexts_of(cli, "snapshots", "guidesX/other.md") == []
    assert contexts_of(cli, "snapshots", "guides.md") == []
    assert contexts_of(cli, "ninety", "guides/backups.md") == ["guides only"]


def test_context_on_one_file(cli: Cli, indexed: Path) -> None:
    add(cli, "sample/guides/backups.md", "the backup page")
    assert contexts_of(cli, "ninety", "guides/backups.md") == ["the backup page"]
    assert contexts_of(cli, "snapshots", "guides/compression.md") == []


def test_contexts_of_another_collection_do_not_apply(cli: Cli, indexed: Path, tmp_path: Path) -> None:
    other = tmp_path / "sample2"
    other.mkdir()
    (other / "a.md").write_text("# A\nsnapshots\n", encoding="utf-8")
    assert ok_json(cli("collection", "add", other, "--json"))["ok"]
    add(cli, "sample2", "second")
    add(cli, "sample", "first")
    data = ok_json(cli("search", "snapshots", "--all", "--json"))
    by_collection = {h["collection"]: h["contexts"] for h in data["results"]}
    assert by_collection == {"sample": ["first"], "sample2": ["second"]}


# --- rm ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["sample/guides", "tansaku://sample/guides"])
def test_rm(cli: Cli, indexed: Path, raw: str) -> None:
    add(cli, "/", "global")
    add(cli, "sample/guides", "guides")
    data = ok_json(cli("context", "rm", raw, "--json"))
    assert data["path"] == "tansaku://sample/guides"
    assert data["removed"] is True
    assert listed(cli) == [("/", "global")]
    assert contexts_of(cli, "ninety", "guides/backups.md") == ["global"]


def test_rm_global(cli: Cli, indexed: Path) -> None:
    add(cli, "/", "global")
    add(cli, "sample", "collection")
    ok_json(cli("context", "rm", "/", "--json"))
    assert listed(cli) == [("tansaku://sample", "collection")]


def test_rm_with_dot(cli: Cli, indexed: Path) -> None:
    add(cli, "notes", cwd=indexed / "notes")
    ok_json(cli("context", "rm", ".", "--json", cwd=indexed / "notes"))
    assert listed(cli) == []


def test_rm_missing_is_not_found(cli: Cli, indexed: Path, config_path: Path) -> None:
    add(cli, "sample/guides", "guides")
    before = config_path.read_bytes()
    error = failed(cli("context", "rm", "sample/notes", "--json"), "CONTEXT_NOT_FOUND", 1)
    assert "tansaku://sample/notes" in error["message"]
    failed(cli("context", "rm", "/", "--json"), "CONTEXT_NOT_FOUND", 1)
    assert config_path.read_bytes() == before


@pytest.mark.sqlite_only("expects no config file")
def test_rm_with_no_config_at_all(cli: Cli, config_path: Path) -> None:
    failed(cli("context", "rm", "/", "--json"), "CONTEXT_NOT_FOUND", 1)
    assert not config_path.exists()


# --- check -------------------------------------------------------------------------------------------


def test_check_shrinks_as_contexts_are_added(cli: Cli, indexed: Path) -> None:
    everything = [
        "tansaku://sample",
        "tansaku://sample/guides",
        "tansaku://sample/notes",
        "tansaku://sample/reference",
        "tansaku://sample/zh",
    ]
    assert missing(cli) == everything
    for i, path in enumerate(everything[:-1]):
        add(cli, path, f"context {i}")
        assert missing(cli) == everything[i + 1 :]
    add(cli, everything[-1], "last")
    # Only once every collection and folder is described is the global context suggested.
    assert missing(cli) == ["/"]
    add(cli, "/", "global")
    assert missing(cli) == []
    result = cli("context", "check")
    assert result.exit_code == 0
    assert result.stdout == "every collection and top-level folder has a context\n"


def test_check_with_global_first(cli: Cli, indexed: Path) -> None:
    add(cli, "/", "global")
    assert missing(cli)[0] == "tansaku://sample"
    assert "/" not in missing(cli)


@pytest.mark.sqlite_only("writes its own config file")
def test_check_without_an_index(cli: Cli, sample: Path, config_path: Path, index_path: Path) -> None:
    config_path.parent.mkdir(parents=True)
    config_path.write_text(f'[collections.sample]\npath = "{sample}"\n', encoding="utf-8")
    # Folders are known from the index; without one, only the collection itself is listed.
    assert missing(cli) == ["tansaku://sample"]
    assert not index_path.exists()


def test_check_ignores_deeper_contexts_and_lists_every_collection(
    cli: Cli, indexed: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    (other / "sub").mkdir(parents=True)
    (other / "sub" / "a.md").write_text("# a\n", encoding="utf-8")
    assert ok_json(cli("collection", "add", other, "--json"))["ok"]
    add(cli, "/", "global")
    add(cli, "sample/guides/deeper", "not top-level")
    found = missing(cli)
    assert "tansaku://other" in found
    assert "tansaku://other/sub" in found
    assert "tansaku://sample/guides" in found
    assert not any("deeper" in p for p in found)


def test_check_text_names_the_command(cli: Cli, indexed: Path) -> None:
    text = cli("context", "check").stdout
    assert "  tansaku://sample/zh" in text
    assert "tansaku context add" in text


def test_contexts_shown_by_status(cli: Cli, indexed: Path) -> None:
    add(cli, "sample/zh", "zh")
    add(cli, "/", "global")
    status = ok_json(cli("status", "--json"))
    assert status["contexts"] == [
        {"path": "/", "text": "global"},
        {"path": "tansaku://sample/zh", "text": "zh"},
    ]


def test_collection_name_wins_over_an_unrelated_folder_of_the_same_name(cli, indexed, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "sample" / "guides").mkdir(parents=True)
    result = cli("context", "add", "sample/guides", "How-to guides", "--json", cwd=elsewhere)
    assert result.exit_code == 0, result.stderr
    assert result.json()["path"] == "tansaku://sample/guides"
