"""A snippet for a name or an option shows its defining line (a man page's NAME line, the option's
entry), not the page header or the synopsis that hold the same words; other queries keep the line
that matches the most terms."""

from __future__ import annotations

import pytest

from tansaku.search.query import parse_query, required_terms, resolve_options
from tansaku.search.snippets import best_snippet

# As evals/fetch_corpora.py converts man pages (groff -man -Tutf8, col -bx): GNU man(7) layout.
TAR = """\
TAR(1)                          GNU TAR Manual                          TAR(1)

NAME
       tar - an archiving utility

SYNOPSIS
   Traditional usage
       tar {A|c|d|r|t|u|x}[GnSkUWOmpsMBiajJzZhPlRvwo] [ARG...]

   UNIX-style usage
       tar -c [-f ARCHIVE] [OPTIONS] [FILE...]

       tar -x [-f ARCHIVE] [OPTIONS] [MEMBER...]

DESCRIPTION
       GNU tar is an archiving program designed to store multiple files in a
       single file (an archive), and to manipulate such archives.

OPTIONS
   Operation mode
       -c, --create
              Create a new archive.

       -x, --extract, --get
              Extract files from an archive.  Arguments are optional.  When
              given, they specify names of the archive members to be
              extracted.

   Device selection and switching
       -f, --file=ARCHIVE
              Use archive file or device ARCHIVE.  If this option is not
              given, tar will first examine the environment variable `TAPE'.
              For instance, if you want tar to delete the archive after
              --extract and add a filter rule, use the -f option.
"""

# BSD mdoc(7) layout, as OpenSSH's pages come out.
SSH_KEYGEN = """\
SSH-KEYGEN(1)             BSD General Commands Manual            SSH-KEYGEN(1)

NAME
     ssh-keygen — OpenSSH authentication key utility

SYNOPSIS
     ssh-keygen [-q] [-a rounds] [-b bits] [-C comment] [-f output_keyfile]
     ssh-keygen -l [-v] [-E fingerprint_hash] [-f input_keyfile]

DESCRIPTION
     ssh-keygen generates, manages and converts authentication keys for
     ssh(1).  ssh-keygen can create keys for use by SSH protocol version 2.

     The options are as follows:

     -a rounds
             When saving a private key, this option specifies the number of
             KDF rounds used.

     -l      Show fingerprint of specified public key file.  ssh-keygen will
             try to find the matching public key file and prints its
             fingerprint.

SEE ALSO
     ssh(1), ssh-add(1), ssh-agent(1), ssh-copy-id(1)
"""

# The same kind of page as Markdown (a man page converted by pandoc), with inline markup.
TAR_MARKDOWN = """\
# TAR(1)

## NAME

tar - an archiving utility

## SYNOPSIS

`tar -x [-f ARCHIVE] [OPTIONS] [MEMBER...]`

## OPTIONS

**-c**, **\\--create**
:   Create a new archive.

**-x**, **\\--extract**, **\\--get**
:   Extract files from an archive.
"""

PAGES = {"tar.1.txt": TAR, "ssh-keygen.1.txt": SSH_KEYGEN, "tar.1.md": TAR_MARKDOWN}


def snippet_for(query: str, page: str) -> list[str]:
    # The terms keyword search gives snippets (search/keyword.py: the required highlight terms),
    # with the options resolved as an index that knows them does (``-a`` is an option, not "not a").
    terms = required_terms(resolve_options(parse_query(query), lambda name: True)).highlight_terms
    found = best_snippet(PAGES[page], terms)
    return [f"{found.start_line + i}: {line}" for i, line in enumerate(found.lines)]


@pytest.mark.parametrize(
    ("query", "page", "defining"),
    [
        ("ssh-keygen", "ssh-keygen.1.txt", "     ssh-keygen — OpenSSH authentication key utility"),
        ("tar -x", "tar.1.txt", "       -x, --extract, --get"),
        ("tar --extract", "tar.1.txt", "       -x, --extract, --get"),
        ("tar", "tar.1.txt", "       tar - an archiving utility"),
        (
            "ssh-keygen -l",
            "ssh-keygen.1.txt",
            "     -l      Show fingerprint of specified public key file.  ssh-keygen will",
        ),
        # The option's entry, not the NAME line: the command's name is one term, not ssh and keygen.
        ("ssh-keygen -a", "ssh-keygen.1.txt", "     -a rounds"),
        ("tar -x", "tar.1.md", "**-x**, **\\--extract**, **\\--get**"),
        ("tar", "tar.1.md", "tar - an archiving utility"),
    ],
)
def test_a_name_or_option_shows_its_defining_line(query: str, page: str, defining: str):
    lines = snippet_for(query, page)
    assert any(line.split(": ", 1)[1] == defining for line in lines), lines


def test_snippets_of_man_pages(snapshot):
    queries = [
        ("ssh-keygen", "ssh-keygen.1.txt"),
        ("ssh-keygen -l", "ssh-keygen.1.txt"),
        ("tar -x", "tar.1.txt"),
        ("tar -f", "tar.1.txt"),
        ("tar -x", "tar.1.md"),
        ("create a new archive", "tar.1.txt"),
    ]
    assert {f"{query} @ {page}": snippet_for(query, page) for query, page in queries} == snapshot


def test_a_sentence_keeps_the_line_with_the_most_terms():
    # No defining line for a sentence's words: the line that holds most of them.
    lines = snippet_for("archiving program multiple files", "tar.1.txt")
    assert lines[1] == "16:        GNU tar is an archiving program designed to store multiple files in a", (
        lines
    )


def test_a_line_wrap_that_starts_with_an_option_is_not_its_entry():
    from tansaku.search.defining import defined_names

    # "--extract and add a filter rule" continues a sentence: the entry is "-x, --extract, --get".
    assert defined_names("              --extract and add a filter rule, use the -f option.") == []
    assert snippet_for("extract filter", "tar.1.txt")[-1].endswith(
        "--extract and add a filter rule, use the -f option."
    )


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("       -x, --extract, --get", ["x", "extract", "get"]),
        ("       -f, --file=ARCHIVE", ["f", "file"]),
        ("     -a rounds", ["a"]),
        ("     -l      Show fingerprint of specified public key file.", ["l"]),
        ("     -L [bind_address:]port:host:hostport", ["L"]),
        ("       gzip, gunzip, zcat - compress or expand files", ["gzip", "gunzip", "zcat"]),
        ("     ssh-keygen — OpenSSH authentication key utility", ["ssh-keygen"]),
        ("- `--save-exact`: save dependencies with an exact version", ["save-exact"]),
        ("**-x**, **\\--extract**", ["x", "extract"]),
        ("## `npm install`", ["npm"]),
        ("TAR(1)                          GNU TAR Manual                          TAR(1)", []),
        ("# TAR(1)", []),
        ("       tar -x [-f ARCHIVE] [OPTIONS] [MEMBER...]", []),
        ("     ssh-keygen [-q] [-a rounds]", []),
        ("       GNU tar is an archiving program designed to store multiple files", []),
        ("", []),
    ],
)
def test_defined_names(line: str, names: list[str]):
    from tansaku.search.defining import defined_names

    assert defined_names(line) == names


def test_an_option_is_never_an_optional_stopword():
    # `-a` and `--all` are what the user asks about, not the words "a" and "all".
    for query, option in (("ls -a", "a"), ("ls --all", "all"), ("grep -i", "i")):
        parsed = required_terms(resolve_options(parse_query(query), lambda name: True))
        assert [t.text for t in parsed.positive if t.option] == [option], query
        assert f"-{option}" in parsed.highlight_terms
