from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tansaku.config.masks import (
    MAX_BRACE_DEPTH,
    NAME_PATTERN,
    MaskMatcher,
    expand_masks,
    validate_collection_name,
)
from tansaku.errors import BadGlob, InvalidName

# --- collection names -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["notes", "a", "A-b_9", "x" * 64, "2024", "-", "_"])
def test_valid_names(name: str) -> None:
    assert validate_collection_name(name) == name
    assert NAME_PATTERN.match(name)


@pytest.mark.parametrize(
    "name", ["", "x" * 65, "my notes", "notes/2024", "café", "a.b", "notes\n", " notes", "日本", "a:b"]
)
def test_invalid_names(name: str) -> None:
    with pytest.raises(InvalidName) as info:
        validate_collection_name(name)
    assert repr(name) in info.value.message
    assert "A-Z" in info.value.message and "'_'" in info.value.message and "'-'" in info.value.message
    assert not NAME_PATTERN.match(name)


# --- expansion --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["**/*.md"], ("**/*.md",)),
        (["**/*.md,**/*.txt"], ("**/*.md", "**/*.txt")),
        (["**/*.{md,txt}"], ("**/*.md", "**/*.txt")),
        (["{a,b{c,d}}"], ("a", "bc", "bd")),
        (["{a,b}/{c,d}.md"], ("a/c.md", "a/d.md", "b/c.md", "b/d.md")),
        (["{a,b},c"], ("a", "b", "c")),
        ([" a.md , b.md "], ("a.md", "b.md")),
        (["x/{ a , b }"], ("x/ a", "x/ b")),
        (["a.md", "a.md,b.md", "{b,a}.md"], ("a.md", "b.md")),
        (["[a,b].md"], ("[a,b].md",)),
        (["[{].md,[}].md"], ("[{].md", "[}].md")),
        (["{[,]x,y}"], ("[,]x", "y")),
        (["*.md{,.bak}"], ("*.md", "*.md.bak")),
        (["x{a}"], ("xa",)),
        (["a{}b"], ("ab",)),
        (["{{{a}}}"], ("a",)),
        (["[]]x,[!]]y"], ("[]]x", "[!]]y")),
        ([], ()),
        ("a.md,b.md", ("a.md", "b.md")),  # a bare string is one value
    ],
)
def test_expand_masks(values: list[str] | str, expected: tuple[str, ...]) -> None:
    assert expand_masks(values) == expected


def test_expansion_limit_allows_a_thousand() -> None:
    # 10 groups of 2 = 1024 > 1000, 9 groups = 512.
    assert len(expand_masks(["{a,b}" * 9])) == 512
    with pytest.raises(BadGlob, match="more than 1000"):
        expand_masks(["{a,b}" * 10])


@pytest.mark.parametrize(
    ("value", "offending", "why"),
    [
        ("", "", "empty mask"),
        ("   ", "", "empty mask"),
        ("a.md,,b.md", "", "empty mask"),
        ("a.md,", "", "empty mask"),
        ("{,}", "", "empty mask"),
        ("*.{md,txt", "*.{md,txt", "unclosed '{'"),
        ("*.md}", "*.md}", "without a matching '{'"),
        ("{a,b}}", "{a,b}}", "without a matching '{'"),
        ("{a,{b}", "{a,{b}", "unclosed '{'"),
        ("[ab.md", "[ab.md", "unclosed '['"),
        ("ab].md", "ab].md", "without a matching '['"),
        ("[]", "[]", "unclosed '['"),
        ("[!]", "[!]", "unclosed '['"),
        ("/abs/*.md", "/abs/*.md", "absolute path"),
        ("{/x,y}", "/x", "absolute path"),
        ("../x.md", "../x.md", "'..' segment"),
        ("a/../b.md", "a/../b.md", "'..' segment"),
        ("a/..", "a/..", "'..' segment"),
        ("notes\\*.md", "notes\\*.md", "backslashes"),
        ("./a.md", "./a.md", "'.' segment"),
        ("a//b.md", "a//b.md", "empty path segment"),
        ("drafts/", "drafts/", "empty path segment"),
        ("[z-a].md", "[z-a].md", "reversed"),
        ("[a/b].md", "[a/b].md", "'/' inside a character class"),
        ("{" * (MAX_BRACE_DEPTH + 1) + "a" + "}" * (MAX_BRACE_DEPTH + 1), None, "nested more than"),
        ("{a,b}" * 10, None, "more than 1000 masks"),
    ],
)
def test_expand_masks_rejects(value: str, offending: str | None, why: str) -> None:
    with pytest.raises(BadGlob) as info:
        expand_masks([value])
    message = info.value.message
    assert why in message
    assert repr(value) in message  # the user can find what they typed
    if offending is not None:
        assert info.value.details["mask"] == offending
        assert repr(offending) in message


@pytest.mark.parametrize(
    ("mask", "why"),
    [
        ("*.{md,txt}", "unexpanded brace group"),
        ("a.md,b.md", "unexpanded comma list"),
        ("../x", "'..' segment"),
        ("/x", "absolute path"),
        ("", "empty mask"),
        ("[ab", "unclosed '['"),
        ("a\\b", "backslashes"),
    ],
)
def test_matcher_validates(mask: str, why: str) -> None:
    with pytest.raises(BadGlob, match=re.escape(why)):
        MaskMatcher([mask])


# --- matching ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mask", "path", "expected"),
    [
        ("**/*.md", "a.md", True),
        ("**/*.md", "x/y/a.md", True),
        ("**/*.md", "a.txt", False),
        ("**/*.md", "a.md.bak", False),
        ("**/*.md", "x/a.mdx", False),
        ("*.md", "a.md", True),
        ("*.md", "x/a.md", False),  # no "/" in the mask: root level only
        ("*.md", ".md", True),  # hidden files are the walker's business, not the matcher's
        ("notes/*.md", "notes/a.md", True),
        ("notes/*.md", "notes/x/a.md", False),
        ("notes/*.md", "other/notes/a.md", False),
        ("notes/**/*.md", "notes/a.md", True),
        ("notes/**/*.md", "notes/x/y/a.md", True),
        ("notes/**/*.md", "other/notes/a.md", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "ab", False),
        ("a/**/b", "a/xb", False),
        ("**/**/*.md", "a.md", True),
        ("**", "a", True),
        ("**", "a/b/c", True),
        ("drafts/**", "drafts/a.md", True),
        ("drafts/**", "drafts/x/a.md", True),
        ("drafts/**", "drafts", False),
        ("*", "a", True),
        ("*", "a/b", False),
        ("a*b.md", "a/b.md", False),
        ("a**b.md", "axxb.md", True),  # "**" inside a segment is "*"
        ("a**b.md", "ax/xb.md", False),
        ("?.md", "a.md", True),
        ("?.md", "ab.md", False),
        ("?.md", ".md", False),
        ("a?b", "a/b", False),
        ("[abc].md", "b.md", True),
        ("[abc].md", "d.md", False),
        ("[a-c].md", "c.md", True),
        ("[a-c].md", "d.md", False),
        ("[!abc].md", "d.md", True),
        ("[!abc].md", "a.md", False),
        ("x[!a]y", "x/y", False),
        ("x[!-0]y", "x/y", False),
        ("x[--0]y", "x/y", False),  # a range spanning "/" still cannot cross segments
        ("x[--0]y", "x.y", True),
        ("[]]x", "]x", True),
        ("[!]]x", "ax", True),
        ("[!]]x", "]x", False),
        ("[*].md", "*.md", True),
        ("[*].md", "a.md", False),
        ("[a-]", "-", True),
        ("[^a]", "^", True),  # "^" is not negation here, "!" is
        ("[^a]", "b", False),
        ("a+b(1).md", "a+b(1).md", True),
        ("a+b(1).md", "aab(1).md", False),
        ("a.md", "abmd", False),
        ("$^|.md", "$^|.md", True),
        ("*.MD", "a.md", False),
        ("*.md", "A.md", True),
        ("日本/*.md", "日本/メモ.md", True),
        ("my notes/*.md", "my notes/a b.md", True),
        ("*.md", "line\nbreak.md", True),
        ("a.md", "a.md\n", False),
    ],
)
def test_matches(mask: str, path: str, expected: bool) -> None:
    assert MaskMatcher([mask]).matches(path) is expected


def test_several_masks() -> None:
    matcher = MaskMatcher(expand_masks(["*.txt", "docs/**/*.{md,rst}"]))
    assert matcher.matches("a.txt")
    assert matcher.matches("docs/a.md")
    assert matcher.matches("docs/x/a.rst")
    assert not matcher.matches("x/a.txt")
    assert not matcher.matches("a.md")


def test_empty_matcher_matches_nothing() -> None:
    matcher = MaskMatcher([])
    assert not matcher.matches("a.md")
    assert not matcher.matches_dir("a")
    assert not matcher.may_match_below("a")


def test_bare_string_is_one_mask() -> None:
    assert MaskMatcher("*.md").masks == ("*.md",)


@pytest.mark.parametrize(
    ("pattern", "rel_dir", "expected"),
    [
        ("drafts", "drafts", True),
        ("drafts", "x/drafts", False),
        ("drafts/**", "drafts", True),
        ("drafts/**", "drafts/sub", True),
        ("drafts/**", "other", False),
        ("**/build", "build", True),
        ("**/build", "a/b/build", True),
        ("**/build", "a/build/x", False),  # the walk never gets there: "a/build" was cut off
        ("**/build/**", "a/build", True),
        ("**", "anything", True),
        ("*.md", "notes", False),
        ("*.md", "x.md", True),
        ("a/*", "a/b", True),
    ],
)
def test_matches_dir(pattern: str, rel_dir: str, expected: bool) -> None:
    assert MaskMatcher([pattern]).matches_dir(rel_dir) is expected


@pytest.mark.parametrize(
    ("mask", "rel_dir", "expected"),
    [
        ("**/*.md", "a", True),
        ("**/*.md", "a/b/c", True),
        ("*.md", "a", False),
        ("notes/*.md", "notes", True),
        ("notes/*.md", "notes/sub", False),
        ("notes/*.md", "other", False),
        ("notes/**/*.md", "notes/x/y", True),
        ("notes/**/*.md", "other", False),
        ("n*/[0-9]*/*.md", "notes/2024", True),
        ("n*/[0-9]*/*.md", "notes/misc", False),
        ("n*/[0-9]*/*.md", "notes/2024/deeper", False),
        ("a/**", "a", True),
        ("a/**", "a/b", True),
        ("a/**", "b", False),
        ("a/**/b/*.md", "a/x/y", True),
    ],
)
def test_may_match_below(mask: str, rel_dir: str, expected: bool) -> None:
    assert MaskMatcher([mask]).may_match_below(rel_dir) is expected


# --- properties -------------------------------------------------------------------------------

GLOBBY = st.text(alphabet="{}[],/\\.*?!-^ a\n")


@given(st.text() | GLOBBY)
def test_expand_masks_only_raises_bad_glob(text: str) -> None:
    try:
        masks = expand_masks([text])
    except BadGlob:
        return
    # What expand_masks accepts, MaskMatcher accepts too, and expansion is then a no-op.
    matcher = MaskMatcher(masks)
    assert expand_masks(masks) == masks
    matcher.matches(text)
    matcher.matches_dir(text)
    matcher.may_match_below(text)


LITERAL_SEGMENT = st.text(alphabet=st.characters(blacklist_characters="/\\{}[],*?"), min_size=1).filter(
    lambda s: s.strip() == s and s not in (".", "..")
)


@given(st.lists(LITERAL_SEGMENT, min_size=1, max_size=4))
def test_a_literal_mask_matches_exactly_itself(segments: list[str]) -> None:
    path = "/".join(segments)
    matcher = MaskMatcher([path])
    assert matcher.matches(path)
    assert not matcher.matches(path + "x")
    assert not matcher.matches("x/" + path)
    if len(segments) > 1:
        assert matcher.may_match_below(segments[0])
