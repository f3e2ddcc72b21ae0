"""Exact copies (issue 38): a text reached by several paths (a symlinked or copied file, a folder
added twice) is one result, at its best path, with the others in ``also_at``; ``--all-copies``
lists every path; ``-n`` counts distinct texts; ``get #docid`` says which path it shows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .models_fixture import requires_llama, requires_minilm

Cli = Callable[..., Any]

ALPHA = "# Alpha\n\nThe zebrafish migrates north every spring to find warmer water.\n"
BETA = "# Beta\n\nThe zebrafish swims south in autumn, then rests near the shore.\n"
GAMMA = "# Gamma\n\nA zebrafish colony sleeps through the winter in deep water.\n"


def ok(result: Any) -> Any:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def paths(data: Any) -> list[str]:
    return [hit["virtual_path"] for hit in data["results"]]


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """A folder with a symlink to one of its own files: two paths, one text."""
    root = tmp_path / "notes"
    root.mkdir()
    (root / "alpha.md").write_text(ALPHA, encoding="utf-8")
    (root / "beta.md").write_text(BETA, encoding="utf-8")
    (root / "gamma.md").write_text(GAMMA, encoding="utf-8")
    (root / "zz-alpha-link.md").symlink_to(root / "alpha.md")
    return root


@pytest.fixture
def copies(cli: Cli, linked: Path) -> Path:
    ok(cli("collection", "add", linked))
    return linked


@pytest.mark.both_backends
def test_a_symlinked_file_is_one_hit_with_its_other_path(cli: Cli, copies: Path) -> None:
    data = ok(cli("search", "migrates", "--json")).json()
    assert paths(data) == ["tansaku://notes/alpha.md"]
    assert data["results"][0]["also_at"] == ["tansaku://notes/zz-alpha-link.md"]
    assert data["total"] == 1
    text = ok(cli("search", "migrates")).stdout
    assert "  also at: tansaku://notes/zz-alpha-link.md\n" in text
    assert text.count("tansaku://") == 2  # one hit, and its other path


@pytest.mark.both_backends
def test_all_copies_shows_every_path(cli: Cli, copies: Path) -> None:
    data = ok(cli("search", "migrates", "--all-copies", "--json")).json()
    assert paths(data) == ["tansaku://notes/alpha.md", "tansaku://notes/zz-alpha-link.md"]
    assert all("also_at" not in hit for hit in data["results"])
    assert data["results"][0]["docid"] == data["results"][1]["docid"]


@pytest.mark.both_backends
def test_the_limit_counts_distinct_texts(cli: Cli, copies: Path) -> None:
    data = ok(cli("search", "zebrafish", "-n", "3", "--json")).json()
    assert len(data["results"]) == 3
    assert len({hit["docid"] for hit in data["results"]}) == 3
    assert data["total"] == 3  # four documents, three texts
    shown = ok(cli("search", "zebrafish", "-n", "3", "--all-copies", "--json")).json()
    assert len(shown["results"]) == 3
    assert len({hit["docid"] for hit in shown["results"]}) < 3 or shown["total"] == 4


@pytest.mark.both_backends
def test_a_folder_added_twice_gives_each_text_once(cli: Cli, copies: Path) -> None:
    ok(cli("collection", "add", copies, "--name", "again"))
    data = ok(cli("search", "zebrafish", "--all", "--json")).json()
    assert len(data["results"]) == 3
    alpha = next(hit for hit in data["results"] if hit["title"] == "Alpha")
    others = {alpha["virtual_path"], *alpha["also_at"]}
    assert others == {
        "tansaku://again/alpha.md",
        "tansaku://again/zz-alpha-link.md",
        "tansaku://notes/alpha.md",
        "tansaku://notes/zz-alpha-link.md",
    }
    beta = next(hit for hit in data["results"] if hit["title"] == "Beta")
    assert len(beta["also_at"]) == 1
    # -c one collection: its own copies only.
    scoped = ok(cli("search", "migrates", "-c", "again", "--json")).json()
    assert scoped["results"][0]["also_at"] == ["tansaku://again/zz-alpha-link.md"]


@pytest.mark.both_backends
def test_get_by_docid_names_the_path_it_shows_and_the_others(cli: Cli, copies: Path) -> None:
    docid = ok(cli("search", "migrates", "--json")).json()["results"][0]["docid"]
    text = ok(cli("get", docid)).stdout
    first, *rest = text.splitlines()
    assert first == (
        f"[{docid} is at 2 paths: showing tansaku://notes/alpha.md;"
        " also at: tansaku://notes/zz-alpha-link.md]"
    )
    assert rest[0] == "1: # Alpha"
    data = ok(cli("get", docid, "--json")).json()
    assert data["virtual_path"] == "tansaku://notes/alpha.md"
    assert data["also_at"] == ["tansaku://notes/zz-alpha-link.md"]
    # By path, or a text at one path: no note.
    assert "also_at" not in ok(cli("get", "notes/zz-alpha-link.md", "--json")).json()
    beta = ok(cli("search", "autumn", "--json")).json()["results"][0]["docid"]
    assert ok(cli("get", beta)).stdout.startswith("1: # Beta")


@requires_llama
@requires_minilm
def test_vsearch_and_query_collapse_copies_before_the_limit(cli: Cli, model: Path, copies: Path) -> None:
    ok(cli("embed"))
    for command in ("vsearch", "query"):
        data = ok(cli(command, "zebrafish migrating north in spring", "-n", "3", "--json")).json()
        assert len(data["results"]) == 3, command
        assert len({hit["docid"] for hit in data["results"]}) == 3, command
        alpha = next(hit for hit in data["results"] if hit["title"] == "Alpha")
        assert alpha["virtual_path"] == "tansaku://notes/alpha.md", command
        assert alpha["also_at"] == ["tansaku://notes/zz-alpha-link.md"], command
        every = ok(
            cli(command, "zebrafish migrating north in spring", "--all-copies", "--all", "--json")
        ).json()
        assert len(every["results"]) == 4, command
        assert all("also_at" not in hit for hit in every["results"]), command


@pytest.mark.both_backends
def test_the_json_endpoints_and_mcp_tools_take_all_copies(copies: Path) -> None:
    """`all_copies` is a field of the search, vsearch and query requests (serve/requests.py), as
    the CLI's flag; the MCP tools list it."""
    from tansaku.api import Tansaku
    from tansaku.serve.mcp import TOOLS
    from tansaku.serve.requests import OPERATIONS, Fields, json_data

    def run(name: str, **fields: Any) -> Any:
        operation = OPERATIONS[name]
        return json_data(operation.run(Tansaku(), Fields(fields, set(operation.fields))))

    once = run("search", query="migrates")
    assert paths(once) == ["tansaku://notes/alpha.md"]
    assert once["results"][0]["also_at"] == ["tansaku://notes/zz-alpha-link.md"]
    every = run("search", query="migrates", all_copies=True)
    assert paths(every) == ["tansaku://notes/alpha.md", "tansaku://notes/zz-alpha-link.md"]
    fused = run("query", query="migrates", no_expand=True, no_rerank=True, all_copies=True)
    assert len(fused["results"]) == 2
    for tool in TOOLS:
        if tool.name in ("search", "vsearch", "query"):
            assert "all_copies" in tool.input_schema["properties"], tool.name


@pytest.fixture
def translated(cli: Cli, tmp_path: Path) -> Path:
    """A page in three languages by folder, one in two by file name, and a page in one language."""
    root = tmp_path / "site"
    pages = {
        "docs/en/install.md": "# Install\n\nInstall tansaku with pipx: the tansaku install guide.\n",
        "docs/fr/install.md": "# Installer\n\nInstaller tansaku avec pipx : guide tansaku.\n",
        "docs/pt-br/install.md": "# Instalar\n\nInstale o tansaku com pipx: guia tansaku.\n",
        "docs/en/other.md": "# Other\n\nAnother tansaku page.\n",
        "guide.en.md": "# Guide\n\nThe tansaku guide in English.\n",
        "guide.ja.md": "# ガイド\n\ntansaku のガイド。\n",
        "intro.md": "# Intro\n\ntansaku intro without a language.\n",
        "intro.de.md": "# Einführung\n\ntansaku Einführung.\n",
    }
    for rel, text in pages.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    ok(cli("collection", "add", root))
    return root


@pytest.mark.both_backends
def test_translations_are_one_result_with_the_other_languages(cli: Cli, translated: Path) -> None:
    data = ok(cli("search", "tansaku", "--all", "--json")).json()
    by_page = {hit["virtual_path"]: hit.get("also_in") for hit in data["results"]}
    install = [path for path in by_page if path.endswith("/install.md")]
    guide = [path for path in by_page if "/guide." in path]
    assert len(install) == 1 and sorted(by_page[install[0]]) == sorted(
        {"en", "fr", "pt-br"} - {install[0].split("/")[-2]}
    )
    assert len(guide) == 1 and len(by_page[guide[0]]) == 1
    # Without a language segment a page is not a translation of one with: both are shown.
    assert {"tansaku://site/intro.md", "tansaku://site/intro.de.md"} <= set(by_page)
    assert by_page["tansaku://site/docs/en/other.md"] is None
    assert data["total"] == len(data["results"]) == 5
    text = ok(cli("search", "tansaku", "--all")).stdout
    assert "  also in: " in text
    every = ok(cli("search", "tansaku", "--all", "--all-copies", "--json")).json()
    assert len(every["results"]) == 8
    assert all("also_in" not in hit for hit in every["results"])


@pytest.mark.both_backends
def test_the_limit_counts_a_translated_page_once(cli: Cli, translated: Path) -> None:
    data = ok(cli("search", "tansaku", "-n", "4", "--json")).json()
    assert len(data["results"]) == 4
    pages = {
        hit["virtual_path"].replace("/fr/", "/en/").replace("/pt-br/", "/en/") for hit in data["results"]
    }
    assert len(pages) == 4


def test_language_segments() -> None:
    from tansaku.search.languages import neutral

    assert neutral("docs/en/intro.md") == ("docs/*/intro.md", "en")
    assert neutral("docs/zh_CN/a/b.md") == ("docs/*/a/b.md", "zh-cn")
    assert neutral("docs/pt-br/intro.md") == ("docs/*/intro.md", "pt-br")
    assert neutral("index.ja.html") == ("index.*.html", "ja")
    assert neutral("manual/mod_ssl.html.ko") == ("manual/mod_ssl.html.*", "ko")
    for plain in ("intro.md", "notes.fr", "hr/policy.md", "de-docs/x.md", "kids/en.md"):
        assert neutral(plain) is None, plain


def test_version_segments() -> None:
    from tansaku.search.languages import in_language, neutral

    assert neutral("python/3.11/library/os.html") == ("python/*/library/os.html", "3.11")
    assert neutral("api/v2/auth.md") == ("api/*/auth.md", "v2")
    assert neutral("httpd/2.4.62/x.html") == ("httpd/*/x.html", "2.4.62")
    assert in_language("python/3.11/library/os.html", "3.12") == "python/3.12/library/os.html"
    # A plain number is a year, a month, a chapter; a dotted file name part is no version.
    for plain in ("notes/2024/01/meeting.md", "chapter/3/x.md", "index.2.4.html", "v/x.md", "1.x/a.md"):
        assert neutral(plain) is None, plain


@pytest.mark.both_backends
def test_versions_of_a_page_are_one_result_with_the_other_versions(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "manual"
    for version, words in (("3.11", "os.walk yields a tuple"), ("3.12", "os.walk yields a tuple, sorted")):
        (root / version).mkdir(parents=True)
        (root / version / "os.md").write_text(f"# os\n\n{words}: the wombat module.\n", encoding="utf-8")
    (root / "3.12" / "new.md").write_text("# New\n\nThe wombat news.\n", encoding="utf-8")
    ok(cli("collection", "add", root))
    data = ok(cli("search", "wombat", "--json")).json()
    shown = {hit["virtual_path"]: hit.get("also_in") for hit in data["results"]}
    [os_page] = [path for path in shown if path.endswith("/os.md")]
    other = "3.11" if "/3.12/" in os_page else "3.12"
    assert shown[os_page] == [other] and shown["tansaku://manual/3.12/new.md"] is None
    assert f"  also in: {other}" in ok(cli("search", "wombat")).stdout
    assert len(ok(cli("search", "wombat", "--all-copies", "--json")).json()["results"]) == 3


@pytest.mark.both_backends
def test_a_fused_list_merges_copies_and_translations_the_lists_kept_apart(cli: Cli, translated: Path) -> None:
    """`query` fuses lists collapsed on their own; what two lists kept apart is merged again."""
    from tansaku.api import Tansaku
    from tansaku.search.copies import merged_copies

    api = Tansaku()
    every = api.search("tansaku", limit=None, all_copies=True).hits
    with api._reader() as conn:
        merged = merged_copies(conn, every)
    once = api.search("tansaku", limit=None).hits
    assert [(h.virtual_path, set(h.also_in)) for h in merged] == [
        (h.virtual_path, set(h.also_in)) for h in once
    ]
