"""Blocks a site repeats on its pages (menus, banners, breadcrumbs, footers) are left out of its
HTML pages' text: found by comparing the pages (sources/boilerplate.py), applied by `update`
(index/repeated.py), out of the index, the snippets and `get` (issue 38)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tansaku.sources.boilerplate import MIN_PAGES, RepeatedBlocks, blocks, join, strip_repeated

CliResult = Any
Cli = Callable[..., CliResult]

pytestmark = pytest.mark.both_backends

MENU = "Home | Guides | Reference | Report a bug"
BANNER = "Wombat Server Version 3.1"
FOOTER = "Copyright 2026 The Wombat Project. Licensed under the MIT license."
SIDEBAR = ["### Bugfix checklist", "- changelog", "- known issues", "- report a bug"]


def page(own: list[str], *, sidebar: bool = False) -> str:
    """A page of the site as the HTML reader writes it: the template around ``own`` blocks."""
    middle = own[:2] + (SIDEBAR if sidebar else []) + own[2:]
    return "\n\n".join([MENU, BANNER, *middle, FOOTER, MENU]) + "\n"


def site(count: int = 8, **kwargs: Any) -> dict[str, str]:
    return {
        f"guide/p{n}.html": page(
            [
                f"# Topic {n}",
                f"Topic {n} explains the quokka{n} setting.",
                "## Notes",
                "Note",
                f"Mind quokka{n}.",
            ],
            **kwargs,
        )
        for n in range(count)
    }


def test_blocks_give_the_text_back() -> None:
    text = (
        "# T\n\npara one\nline two\n\n- a\n- b\n  - c\n\n| x | y |\n| 1 | 2 |\n\n"
        "```\ncode\n\n# not a heading\n```\n\nend\n"
    )
    assert join(blocks(text)) == text
    assert [b.kind for b in blocks(text)] == [
        "heading",
        "paragraph",
        "item",
        "item",
        "item",
        "row",
        "row",
        "code",
        "paragraph",
    ]


def test_the_template_leaves_and_the_page_stays() -> None:
    stripped = strip_repeated(site())
    assert (
        stripped["guide/p3.html"]
        == "# Topic 3\n\nTopic 3 explains the quokka3 setting.\n\n## Notes\n\nNote\n\nMind quokka3.\n"
    )


def test_a_sidebar_run_leaves_with_its_heading() -> None:
    pages = site(sidebar=True)
    text = strip_repeated(pages)["guide/p2.html"]
    assert "Bugfix" not in text and "changelog" not in text
    assert text.startswith("# Topic 2\n\nTopic 2 explains the quokka2 setting.\n\n## Notes\n")


def test_a_repeated_block_alone_inside_a_page_stays() -> None:
    # "Note" is on every page, but alone between the page's own blocks: the page's words. At the
    # page's end it would go, as a footer does.
    assert "\n\nNote\n\n" in strip_repeated(site())["guide/p1.html"]
    pages = {path: text.replace("Mind quokka", "Note\n\nMind quokka") for path, text in site().items()}
    assert "\n\nNote\n\n" in strip_repeated(pages)["guide/p1.html"]


def test_code_blocks_always_stay() -> None:
    code = "```\nlogger = logging.getLogger(__name__)\n```"
    pages = {path: code + "\n\n" + text for path, text in site().items()}
    assert strip_repeated(pages)["guide/p0.html"].startswith(code)


def test_a_repeated_heading_stays_while_its_section_has_its_own_words() -> None:
    pages = {
        f"p{n}.html": f"{MENU}\n\n# Page {n}\n\n## Synopsis\n\nquokka{n} [options]\n\n{FOOTER}\n"
        for n in range(8)
    }
    assert strip_repeated(pages)["p4.html"] == "# Page 4\n\n## Synopsis\n\nquokka4 [options]\n"


def test_too_few_pages_are_not_a_template() -> None:
    pages = site(count=MIN_PAGES - 1)
    assert strip_repeated(pages) == pages


def test_copies_of_one_page_are_not_its_template() -> None:
    text = page(["# Same", "The same text, copied."])
    pages = {f"copy{n}/same.html": text for n in range(10)}
    assert strip_repeated(pages) == pages


def test_translations_vote_once() -> None:
    # A paragraph left untranslated in six translations of one page is the page's own text.
    untranslated = "In order to address issues of the old format, a new one was made."
    pages = {
        f"{lang}/ch05.html": f"# Chapter 5 ({lang})\n\n{untranslated}\n\n{untranslated} Again.\n\nMore.\n"
        for lang in ("en", "de", "fr", "ja", "ko", "es")
    }
    pages.update(site())
    found = RepeatedBlocks(pages, same_page=lambda path: path.split("/", 1)[-1])
    assert untranslated not in found.repeated_in("en/ch05.html")[0]
    assert found.strip("en/ch05.html", pages["en/ch05.html"]) == (pages["en/ch05.html"], 0)


def test_a_page_that_is_all_template_is_left_whole() -> None:
    pages = site()
    pages["guide/empty.html"] = "\n\n".join([MENU, BANNER, FOOTER]) + "\n"
    assert strip_repeated(pages)["guide/empty.html"] == pages["guide/empty.html"]


def test_a_template_of_one_folder_is_found_among_many_sites() -> None:
    # 8 pages of one manual among 200 of others: 4% of the collection, all of its folder.
    pages = {f"other/o{n}.html": f"# Other {n}\n\nwords {n}\n" for n in range(200)}
    pages.update({f"wombat/{path}": text for path, text in site().items()})
    assert BANNER not in strip_repeated(pages)["wombat/guide/p0.html"]


# --- through update ----------------------------------------------------------------------------------


def html_page(n: int, title: str, body: str) -> str:
    """A page whose template no markup names: no <nav>, no <footer>, no generator's classes."""
    return (
        f"<html><head><title>{title} - Wombat Server Version 3.1</title></head><body>"
        f"<div class='top'><p>{MENU}</p><p>{BANNER}</p></div>"
        f"<h1>{title}</h1><p>{body}</p>"
        f"<div class='bottom'><p>{FOOTER}</p></div></body></html>"
    )


def write_site(folder: Path, count: int = 8) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        (folder / f"page{n}.html").write_text(
            html_page(n, f"Setting number {n}", f"The numbat{n} option sets the burrow depth {n}."),
            encoding="utf-8",
        )


def json_of(result: CliResult) -> dict:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.json()


def page_text(cli: Cli, ref: str) -> str:
    lines = json_of(cli("get", ref, "--json"))["lines"]
    return "\n".join(line["text"] if isinstance(line, dict) else str(line) for line in lines)


def test_update_leaves_the_template_out_of_the_index_snippets_titles_and_get(
    cli: Cli, tmp_path: Path
) -> None:
    folder = tmp_path / "site"
    write_site(folder)
    [report] = json_of(cli("collection", "add", folder, "--name", "site", "--formats", "html", "--json"))[
        "collections"
    ]
    assert report["repeated_pages"] == 8
    assert report["repeated_blocks"] == 8 * 3  # menu, banner, footer (the menu's second copy is absent)

    # The footer's words are on every page and now in none: "no results" is true.
    assert json_of(cli("search", "Wombat Project license", "--json"))["results"] == []
    [hit] = json_of(cli("search", "numbat3", "--json"))["results"]
    assert hit["title"] == "Setting number 3"  # the site's name, a repeated block, cut off
    assert "Report a bug" not in hit["snippet"] and "Version 3.1" not in hit["snippet"]
    text = page_text(cli, "site/page3.html")
    assert text.startswith("# Setting number 3") and "Copyright" not in text

    # A page added later is judged with the pages already indexed.
    (folder / "page9.html").write_text(html_page(9, "Late page", "The bilby option."), encoding="utf-8")
    [again] = json_of(cli("update", "--json"))["collections"]
    assert again["added"] == ["page9.html"] and again["repeated_pages"] == 1
    text = page_text(cli, "site/page9.html")
    assert "Report a bug" not in text and "bilby" in text


def test_update_says_what_it_left_out_and_a_dry_run_what_it_would(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "site"
    write_site(folder)
    result = cli("collection", "add", folder, "--name", "site", "--formats", "html", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert (
        "  would leave out 24 blocks the collection's pages repeat (menus, banners, footers)"
        " from 8 HTML pages" in result.stdout
    )
    result = cli("collection", "add", folder, "--name", "site", "--formats", "html")
    assert (
        "  left out 24 blocks the collection's pages repeat (menus, banners, footers) from 8 HTML pages"
        in result.stdout
    )
    assert "would leave" not in cli("update").stdout  # nothing read: nothing to say


def test_a_long_block_is_never_a_template() -> None:
    long = "A long paragraph that every page quotes in full. " * 25  # over MAX_KEY_CHARS
    pages = {path: long + "\n\n" + text for path, text in site().items()}
    assert strip_repeated(pages)["guide/p0.html"].startswith(long)
