"""Keyword ranking rules (issue 9), end to end on a real index: identifiers, definitions, option
names, long queries, and no false "No results"."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tansaku.api import Tansaku
from tansaku.search.keyword import command_term
from tansaku.search.query import fts_expression, parse_query, required_terms
from tansaku.store import db

pytestmark = pytest.mark.both_backends

FILLER = "\n".join(
    f"Paragraph {i} talks about files, processes and the operating system." for i in range(300)
)

DOCS = {
    "library/os.path.rst.txt": """:mod:`os.path` --- Common pathname manipulations
================================================

.. module:: os.path

This module implements some useful functions on pathnames.

.. function:: join(path, *paths)

   Join one or more path segments intelligently.

.. function:: basename(path)

   Return the base name of pathname *path*.
""",
    "tutorial/files.rst.txt": """Reading and writing files
=========================

Build paths with os.path.join rather than string concatenation: os.path.join(base, name)
works everywhere, and os.path.join keeps separators right. See also os.environ for settings.
""",
    "library/calendar.rst.txt": """:mod:`calendar` --- General calendar-related functions
======================================================

.. module:: calendar

.. function:: monthrange(year, month)

   Returns weekday of first day of the month and number of days in month.
""",
    "library/os.rst.txt": f""":mod:`os` --- Miscellaneous operating system interfaces
=======================================================

.. module:: os

{FILLER}

.. data:: environ

   A mapping object where keys and values are strings that represent the process environment.

{FILLER}
""",
    "library/posix.rst.txt": """:mod:`posix` --- The most common POSIX system calls
===================================================

Changing os.environ changes the environment; prefer os.environ over posix.environ.
""",
    "library/wsgiref.rst.txt": """:mod:`wsgiref` --- WSGI utilities
=================================

.. module:: wsgiref.handlers

.. class:: BaseHandler()

   .. attribute:: os_environ

      The default environment variables, a copy of os.environ (os.environ at start-up).
""",
    "man1/find.1.txt": """FIND(1)                     General Commands Manual                    FIND(1)

NAME
       find - search for files in a directory hierarchy

TESTS
       -mtime n
              File's data was last modified less than, more than or exactly n*24 hours ago.

       -name pattern
              Base of file name matches shell pattern pattern.
""",
    "man1/du.1.txt": """DU(1)                            User Commands                           DU(1)

NAME
       du - estimate file space usage

OPTIONS
       -s, --summarize
              display only a total for each argument

       -h, --human-readable
              print sizes in human readable format (e.g., 1K 234M 2G)
""",
    "man1/rm.1.txt": """RM(1)                            User Commands                           RM(1)

NAME
       rm - remove files or directories

DESCRIPTION
       By default, rm does not remove directories. If a directory cannot be removed,
       rm reports "cannot remove: Is a directory"; use --recursive (-r) to remove it.

       --preserve-root
              do not remove '/' (default)
""",
    "man8/ld.so.8.txt": f"""LD.SO(8)                 System Manager's Manual                 LD.SO(8)

NAME
       ld.so, ld-linux.so - dynamic linker/loader

DESCRIPTION
       The programs ld.so and ld-linux.so* find and load the shared objects (shared
       libraries) needed by a program, prepare the program to run, and then run it.
       Linux binaries require dynamic linking (linking at run time) unless the -static
       option was given to the linker during compilation.

{FILLER}
""",
    "man8/ldconfig.8.txt": """LDCONFIG(8)              System Manager's Manual              LDCONFIG(8)

NAME
       ldconfig - configure dynamic linker run-time bindings

DESCRIPTION
       ldconfig creates the links and cache that ld.so reads; ld.so, the run-time linker,
       uses the cache ldconfig writes, so ld.so finds libraries fast. See ld.so(8), ld.so
       and ld.so.conf.
""",
    "man8/umount.8.txt": """UMOUNT(8)                System Administration                UMOUNT(8)

NAME
       umount - unmount filesystems

DESCRIPTION
       The umount command detaches the mentioned filesystem(s) from the file hierarchy.
       A filesystem cannot be unmounted when it is busy.
""",
    "man8/pivot_root.8.txt": """PIVOT_ROOT(8)            System Administration            PIVOT_ROOT(8)

NAME
       pivot_root - change the root filesystem

NOTES
       The old root may still be busy: a process with its current directory there keeps the
       target busy, and umount of the old root reports that the target is busy.
""",
    "man1/cut.1.txt": """CUT(1)                           User Commands                          CUT(1)

NAME
       cut - remove sections from each line of files

OPTIONS
       -d, --delimiter=DELIM
              use DELIM instead of TAB for field delimiter

       -f, --fields=LIST
              select only these fields
""",
    "notes/laptop.md": "# Restore on the laptop\n\nHow to restore a file from the laptop backup.\n",
    "notes/server.md": "# Restore on the server\n\nHow to restore the nightly backup on the server.\n",
    "notes/du-usage.md": "# Disk usage notes\n\nWe ran du on the server and the summary was short.\n",
}


def add_collection(cli, root: Path, docs: dict[str, str], name: str, masks: str) -> Path:
    for rel, text in docs.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    result = cli("collection", "add", root, "--name", name, "--mask", masks)
    assert result.exit_code == 0, result.stderr
    return root


@pytest.fixture
def corpus(tmp_path: Path, cli) -> Path:
    return add_collection(cli, tmp_path / "docs", DOCS, "docs", "**/*.txt,**/*.md")


def hits(cli, *query: str) -> list[dict]:
    result = cli("search", "--json", "-n", "10", "--", *query)
    assert result.exit_code == 0, result.stderr
    return result.json()["results"]


def ranked(cli, *query: str) -> list[str]:
    return [hit["path"] for hit in hits(cli, *query)]


def scores(cli, *query: str) -> list[float]:
    return [hit["score"] for hit in hits(cli, *query)]


def codes(cli, *query: str) -> list[str]:
    return [w["code"] for w in cli("search", "--json", "--", *query).json()["warnings"]]


@pytest.mark.usefixtures("corpus")
class TestIdentifiers:
    def test_the_page_defining_a_dotted_name_ranks_first(self, cli):
        # The defining page never writes "os.path.join"; the tutorial writes it three times.
        assert ranked(cli, "os.path.join")[:2] == ["library/os.path.rst.txt", "tutorial/files.rst.txt"]

    def test_parts_are_required_not_their_adjacency(self, cli):
        assert ranked(cli, "calendar.monthrange") == ["library/calendar.rst.txt"]
        assert codes(cli, "calendar.monthrange") == []

    def test_a_definition_outranks_mentions_on_a_short_page(self, cli):
        # os.rst.txt is long (BM25 alone ranks it below the short pages quoting os.environ twice);
        # wsgiref defines BaseHandler.os_environ, the same tokens but not the same name.
        assert ranked(cli, "os.environ")[0] == "library/os.rst.txt"

    def test_a_pasted_name_keeps_its_definition(self, cli):
        # Backticks from Markdown, brackets from a call: os.rst.txt still defines the name.
        assert ranked(cli, "`os.environ`")[0] == "library/os.rst.txt"
        assert ranked(cli, "os.environ()")[0] == "library/os.rst.txt"

    def test_a_name_whose_parts_never_meet_still_returns_results(self, cli):
        paths = ranked(cli, "os.path.nonexistentname")
        assert paths and paths[0] == "library/os.path.rst.txt"
        assert codes(cli, "os.path.nonexistentname") == ["PARTIAL_MATCH"]

    def test_snake_case_and_other_separators_are_identifiers(self, cli):
        assert parse_query("Py_INCREF").terms[0].parts == ("py", "incref")
        assert parse_query("a::b->c").terms[0].parts == ("a", "b", "c")
        assert ranked(cli, "os::path/join")[0] == "library/os.path.rst.txt"

    def test_a_name_that_a_title_is_about_is_defined_there(self, cli):
        # "ld.so, ld-linux.so - dynamic linker/loader" names ld.so; ldconfig(8) only mentions it.
        assert ranked(cli, "ld.so")[0] == "man8/ld.so.8.txt"


@pytest.mark.usefixtures("corpus")
class TestOptions:
    def test_double_dash_option_is_searched_and_ranks_its_page_first(self, cli):
        assert ranked(cli, "--preserve-root")[0] == "man1/rm.1.txt"

    def test_a_dash_word_the_index_knows_as_an_option_is_searched(self, cli):
        assert ranked(cli, "find", "-mtime")[0] == "man1/find.1.txt"

    def test_grouped_short_options_are_searched_as_letters(self, cli):
        assert ranked(cli, "du", "-sh")[0] == "man1/du.1.txt"

    def test_an_option_with_its_value_attached_is_searched(self, cli):
        # Typed as on the command line: -d: and -f1 are -d and -f, not exclusions of d and f1.
        assert ranked(cli, "cut", "-d:", "-f1")[0] == "man1/cut.1.txt"

    def test_other_dash_words_still_exclude(self, cli):
        paths = ranked(cli, "restore", "-laptop")
        assert "notes/server.md" in paths
        assert "notes/laptop.md" not in paths

    def test_a_quoted_dash_phrase_always_excludes(self, cli):
        assert "man1/find.1.txt" not in ranked(cli, "search files", '-"mtime"')


CASED_DOCS = {
    # Both pages list -b; only python.1 lists -B. Case-blind, the three tie on "-B".
    "man1/python.1.txt": """PYTHON(1)                    User Commands                    PYTHON(1)

NAME
       python - an interpreted, interactive, object-oriented programming language

OPTIONS
       -b     Issue a warning when converting bytes to str.

       -B     Don't write .pyc files on import.
""",
    "man1/compileall.1.txt": """COMPILEALL(1)                User Commands                COMPILEALL(1)

NAME
       compileall - byte-compile Python libraries

OPTIONS
       -b     Write legacy .pyc files next to their sources, for python -B users who
              changed their mind.
""",
    "man1/unittest.1.txt": """UNITTEST(1)                  User Commands                  UNITTEST(1)

NAME
       unittest - run Python tests

OPTIONS
       -b     Buffer output; python -B keeps the tree clean.
""",
    "man1/tar.1.txt": """TAR(1)                       User Commands                       TAR(1)

NAME
       tar - an archiving utility

OPTIONS
       --mtime=DATE-OR-FILE
              Set mtime for added files. To archive what find found, pipe find into tar:
              find . -mtime -1 | tar -T - -cf recent.tar (find -mtime, find -print0).
""",
    "man1/find.1.txt": f"""FIND(1)                      User Commands                      FIND(1)

NAME
       find - search for files in a directory hierarchy

TESTS
       -mtime n
              File's data was last modified n*24 hours ago.

{FILLER}
""",
    "src/click/decorators.py": f"""import typing as t

{"".join(f"# {line}" + chr(10) for line in FILLER.splitlines())}


def option(*param_decls: str) -> t.Callable:
    \"\"\"Attaches an option to the command.\"\"\"
    return lambda f: f
""",
    "library/functions.rst.txt": f"""Built-in Functions
==================

.. function:: open(file, mode='r')

   Open *file* and return a corresponding file object.

{FILLER}
""",
    "library/webbrowser.rst.txt": """:mod:`webbrowser` --- Web-browser controller
============================================

.. module:: webbrowser

.. function:: open(url, new=0)

   Display url using the default browser; open() opens it, as open(url) would.

Open URL in a new tab, if a browser window is already open
----------------------------------------------------------

   See open(): webbrowser.open(url, new=2).
""",
    "configuring-npm/package-lock-json.md": """---
title: package-lock.json
description: A manifestation of the manifest
---

### Description

It describes the exact tree that was generated, so that later installs produce the same tree.
""",
    "configuring-npm/npm-shrinkwrap-json.md": """---
title: npm-shrinkwrap.json
---

### Description

npm-shrinkwrap.json is a file created by npm shrinkwrap. It is identical to package-lock.json,
with one caveat: unlike package-lock.json, it may be published. package-lock.json is never
published; prefer package-lock.json. Both package-lock.json and npm-shrinkwrap.json lock the
tree; package-lock.json wins when both exist. Commit package-lock.json; package-lock.json
again, package-lock.json once more.
""",
    "library/termui.rst.txt": """:mod:`termui` --- Terminal helpers
==================================

.. function:: progressbar(iterable)

   Return a ProgressBar for the iterable. The ProgressBar draws itself; progressbar only builds it.
""",
    "library/termui_impl.rst.txt": """:mod:`termui_impl` --- Terminal internals
=========================================

.. class:: ProgressBar(iterable, length)

   Draws a bar.
""",
    "reference/datamodel.rst.txt": """Data model
==========

.. data:: object.__slots__

   This class variable can be assigned a string, iterable, or sequence of strings.
""",
    "c-api/typeobj.rst.txt": """Type objects
============

.. member:: PyType_Spec.slots

   Array of slots; __slots__ of a heap type are not slots here. slots, slots, __slots__.
""",
    "src/click/types.py": """import typing as t


class UnprocessedParamType:
    name = "text"


#: A dummy parameter type that just does nothing.
UNPROCESSED = UnprocessedParamType()
""",
    "src/click/core.py": """class Option:
    \"\"\"An option of a command: an Option is made by option(); see Option.option_name.\"\"\"

    def option_name(self) -> str:
        return "option"
""",
    "src/click/ranges.py": """class IntRange:
    \"\"\"Restricts an int to a range.\"\"\"
""",
    "tests/test_ranges.py": """import click


def test_int_range():
"""
    + "".join(f"    assert click.IntRange({i}, {i + 5}).convert({i}) == {i}\n" for i in range(12)),
    "tools/types.py": "UNPROCESSED = None\n",
    "docs/arguments.rst": """Arguments
=========

Use type=click.UNPROCESSED to keep values as given.
""",
}


# Ten test files with test_option_* headings, each writing click.option twice.
CASED_DOCS.update(
    {
        f"tests/test_options_{i}.py": f"""import click


def test_option_default_{i}():
    @click.option("--x")
    def cli(x): ...


def test_option_multiple_{i}():
    @click.option("--y", multiple=True)
    def cli(y): ...
"""
        for i in range(10)
    }
)


@pytest.fixture
def cased_corpus(tmp_path: Path, cli) -> Path:
    return add_collection(cli, tmp_path / "cased", CASED_DOCS, "cased", "**/*.txt,**/*.py,**/*.rst,**/*.md")


@pytest.mark.usefixtures("cased_corpus")
class TestNamesAsTyped:
    def test_an_option_is_defined_only_in_its_own_case(self, cli):
        assert ranked(cli, "python", "-B")[0] == "man1/python.1.txt"
        # All three define -b: each gains what python.1 alone gains for -B.
        lower, upper = scores(cli, "-b"), scores(cli, "-B")
        assert len(lower) == 3 and max(lower) - min(lower) < 0.01
        assert upper[0] - upper[1] > 0.05

    def test_a_mixed_case_name_asks_for_that_case(self, cli):
        # termui.rst.txt writes ProgressBar twice and defines progressbar(); case-blind, it wins.
        assert ranked(cli, "ProgressBar")[0] == "library/termui_impl.rst.txt"

    def test_a_name_in_backticks_or_with_brackets_is_the_name(self, cli):
        assert ranked(cli, "`ProgressBar`")[0] == "library/termui_impl.rst.txt"
        assert ranked(cli, "ProgressBar()")[0] == "library/termui_impl.rst.txt"

    def test_a_dunder_name_is_not_a_word_inside_other_names(self, cli):
        # datamodel defines object.__slots__; typeobj defines PyType_Spec.slots, a different name.
        assert ranked(cli, "__slots__")[0] == "reference/datamodel.rst.txt"

    def test_code_names_its_module_by_its_path(self, cli):
        # click.UNPROCESSED is UNPROCESSED in click/types.py; arguments.rst writes the dotted name
        # and, without this rule, ranks first.
        assert ranked(cli, "click.UNPROCESSED")[0] == "src/click/types.py"
        assert ranked(cli, "click.types.UNPROCESSED")[0] == "src/click/types.py"
        # The module must be in the path: tools/types.py defines UNPROCESSED too, outside click.
        assert ranked(cli, "other.UNPROCESSED")[0] != "src/click/types.py"

    def test_inside_its_module_a_name_is_its_qualified_name(self, cli):
        # ranges.py writes IntRange, never click.IntRange; the test writes click.IntRange twelve
        # times, and ranked first when only its mentions counted as the dotted name.
        assert ranked(cli, "click.IntRange")[0] == "src/click/ranges.py"

    def test_a_definition_in_the_case_typed_outranks_one_in_another_case(self, cli):
        # core.py defines class Option and writes "option" often; decorators.py defines option().
        assert ranked(cli, "click.option")[0] == "src/click/decorators.py"
        assert ranked(cli, "click.Option")[0] == "src/click/core.py"

    def test_a_name_in_many_headings_but_defined_once_counts_as_rare(self, cli):
        # Every test file has test_option_* headings and writes click.option twice; only
        # decorators.py defines option(). Weighed by how often "option" is in a heading, the
        # definition would count as a common word's.
        assert ranked(cli, "click.option")[0] == "src/click/decorators.py"

    def test_a_name_defined_itself_outranks_qualified_names_ending_with_it(self, cli):
        # The builtin open() is defined as "open"; webbrowser defines "webbrowser.open", and a
        # heading that starts with "Open" defines nothing.
        assert ranked(cli, "open()")[0] == "library/functions.rst.txt"

    def test_a_page_titled_with_the_name_defines_it(self, cli):
        # Front matter gives package-lock-json.md its title; npm-shrinkwrap-json.md writes the
        # name four times.
        assert ranked(cli, "package-lock.json")[0] == "configuring-npm/package-lock-json.md"

    def test_the_word_beside_an_option_names_the_command(self, cli):
        # tar(1) lists --mtime too, and mentions find; find(1) is the page of the command.
        assert ranked(cli, "find", "-mtime")[0] == "man1/find.1.txt"

    def test_the_first_word_before_an_option_names_the_command_in_a_longer_query(self, cli):
        # Three terms: no longer a short query, but find(1) still defines "find".
        assert ranked(cli, "find", "-mtime", "files")[0] == "man1/find.1.txt"

    def test_a_name_typed_in_one_case_matches_any_case(self, cli):
        # Lower case (or all capitals) asks nothing of case: both pages define the name.
        assert ranked(cli, "progressbar")[0] == "library/termui.rst.txt"
        assert ranked(cli, "PROGRESSBAR")[0] == "library/termui.rst.txt"


# npm repeats each setting's section in every command page it affects; config.md has them all.
SHARED_SECTION = """#### `ignore-scripts`

* Default: false
* Type: Boolean

If true, npm does not run scripts specified in package.json files.
"""
SETTINGS = ("audit", "cache", "color", "depth", "dry-run", "global", "loglevel", "omit", "prefix", "save")
SHARED_DOCS = {
    "using-npm/config.md": "# config\n\nMore than one way to configure npm.\n\n"
    + "".join(
        f"#### `{key}`\n\n* Default: null\n\nThe {key} setting, described at some length, as every"
        " setting npm has is on this page.\n\n"
        for key in SETTINGS
    )
    + SHARED_SECTION,
    **{
        f"commands/npm-{command}.md": f"# npm-{command}\n\nRun the {command} script.\n\n## Configuration\n\n"
        + SHARED_SECTION
        for command in ("test", "start", "stop")
    },
}


@pytest.fixture
def shared_corpus(tmp_path: Path, cli) -> Path:
    return add_collection(cli, tmp_path / "npm", SHARED_DOCS, "npm", "**/*.md")


@pytest.mark.usefixtures("shared_corpus")
class TestSharedDefinitions:
    def test_a_definition_copied_into_several_pages_ranks_the_page_they_copy_first(self, cli):
        # BM25's length normalisation alone gives the name to the shortest copy.
        assert ranked(cli, "ignore-scripts")[0] == "using-npm/config.md"


# A test quotes the message its code raises, word for word.
CODE_DOCS = {
    "src/pkg/exceptions.py": '''class UsageError(Exception):
    """An internal exception that signals a usage error."""

    def show(self):
        echo(f"Error: {self.format_message()}")


class NoSuchOption(UsageError):
    """Raised if click attempted to handle an option that does not exist."""

    def format_message(self):
        return f"No such option: {self.option_name}"
''',
    "tests/test_options.py": """def test_unknown_option(runner):
    result = runner.invoke(cli, ["--foo"])
    assert result.exception
    assert "Error: No such option: --foo" in result.output
""",
}


@pytest.fixture
def code_corpus(tmp_path: Path, cli) -> Path:
    return add_collection(cli, tmp_path / "code", CODE_DOCS, "code", "**/*.py")


def program_of(index_path: Path, query: str) -> str | None:
    conn = db.open_read(index_path)
    try:
        term = command_term(conn, query, required_terms(parse_query(query)))
    finally:
        conn.close()
    return None if term is None else term.text


@pytest.mark.sqlite_only("reads FTS5 through the SQLite file")
def test_a_message_names_its_program_only_where_a_page_is_titled_by_it(corpus, code_corpus, index_path):
    # man8/umount.8.txt is umount's page; no page is titled "pkg", the program of CODE_DOCS.
    assert program_of(index_path, "umount: /mnt/data: target is busy.") == "umount"
    assert program_of(index_path, "pkg: error: No such option: --verbos") is None


@pytest.mark.usefixtures("code_corpus")
class TestTestFiles:
    def test_a_pasted_error_ranks_the_code_that_raises_it_above_the_test_that_quotes_it(self, cli):
        assert ranked(cli, "Error: No such option: --verbos")[0] == "src/pkg/exceptions.py"


@pytest.mark.usefixtures("corpus")
class TestLongQueries:
    def test_a_pasted_error_message_does_not_need_every_word(self, cli):
        paths = ranked(cli, "rm: cannot remove 'build': Is a directory")
        assert paths[0] == "man1/rm.1.txt"

    def test_a_pasted_message_names_the_program_that_printed_it(self, cli):
        # "umount:" says which page explains it; pivot_root(8) only has more of its words.
        assert ranked(cli, "umount: /mnt/data: target is busy.")[0] == "man8/umount.8.txt"

    def test_short_queries_still_require_every_term(self, cli):
        assert ranked(cli, "restore laptop") == ["notes/laptop.md"]

    def test_a_term_found_nowhere_is_reported(self, cli):
        result = cli("search", "restore", "nightly", "zebrafish", "--json").json()
        assert result["results"][0]["path"] == "notes/server.md"
        (warning,) = result["warnings"]
        assert warning["code"] == "PARTIAL_MATCH" and "zebrafish" in warning["message"]


WORDS = ["os", "path", "join", "environ", "restore", "laptop", "du", "mtime", "zebrafish", "qqq", "the", "a"]
JOINERS = [".", "_", "::", "->", "/", "-", " ", "=", "'s "]


@pytest.mark.sqlite_only("counts FTS5 matches in the SQLite file")
@pytest.mark.usefixtures("corpus")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), joins=st.lists(st.sampled_from(JOINERS))
)
def test_no_false_zero(words: list[str], joins: list[str], index_path: Path) -> None:
    """If any word or identifier part of the query occurs in any document, there are results."""
    query = words[0] + "".join(j + w for j, w in zip(joins, words[1:], strict=False))
    query += "".join(" " + w for w in words[len(joins) + 1 :])
    anything = fts_expression(parse_query(query), "any")
    assert anything is not None
    conn = db.open_read(index_path)
    try:
        matches = conn.execute("SELECT count(*) FROM documents_fts WHERE documents_fts MATCH ?", (anything,))
        occurs = matches.fetchone()[0] > 0
    finally:
        conn.close()
    hits = Tansaku().search(query, limit=5).hits
    assert bool(hits) == occurs, query
