"""The front-matter parser alone (fields/frontmatter.py) and the --where syntax (fields/where.py):
table-driven, in milliseconds."""

from __future__ import annotations

import pytest

from tansaku.errors import UsageError
from tansaku.fields import frontmatter
from tansaku.fields.frontmatter import MAX_VALUES, parse
from tansaku.fields.where import parse_condition, parse_where


def shown(text: str) -> dict[str, object]:
    front = parse(text)
    assert front.problem is None, front.problem
    return {f.name: [v.text for v in f.values] if f.many else f.values[0].text for f in front.fields}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("---\ntags: [a, b]\n---\nbody", {"tags": ["a", "b"]}),
        ("---\ntags:\n  - a\n  - b\n...\nbody", {"tags": ["a", "b"]}),
        ("---\r\ntitle: CRLF\r\n---\r\nbody", {"title": "CRLF"}),
        ('+++\ntitle = "T"\ntags = ["x"]\n+++\nbody', {"title": "T", "tags": ["x"]}),
        ("---\na:\n  b:\n    c: deep\n    d:\n      e: too deep\n---\n", {"a.b.c": "deep"}),
        ("---\nauthors: [{name: A}, B]\nempty:\nnone: []\n---\n", {"authors": ["B"]}),
        ("---\nTags: first\ntags: second\n---\n", {"Tags": "first"}),
        ("---\n---\nbody", {}),
        ("no front matter", {}),
        ("---\nnever closed: a rule, not front matter\n", {}),
        ("text\n---\nlate: block\n---\n", {}),
    ],
)
def test_fields_as_written(text: str, expected: dict[str, object]):
    assert shown(text) == expected


def test_kinds_numbers_and_days():
    front = parse(
        "---\nd: 2024-05-01\nt: 2024-05-01T10:00:00Z\ns: '2024-05-02'\nn: 3\nf: 2.5\nq: '7'\nb: false\n"
        "big: 1e999\nnan: .nan\n---\n"
    )
    values = {f.name: f.values[0] for f in front.fields}
    assert (values["d"].kind, values["d"].day) == ("date", "2024-05-01")
    assert (values["t"].kind, values["t"].day) == ("datetime", "2024-05-01")
    assert (values["s"].kind, values["s"].day) == ("str", "2024-05-02")
    assert (values["n"].kind, values["n"].number) == ("int", 3.0)
    assert (values["f"].kind, values["f"].number) == ("float", 2.5)
    assert (values["q"].kind, values["q"].number) == ("str", 7.0)
    assert (values["b"].kind, values["b"].text) == ("bool", "false")
    assert values["nan"].number is None  # never compared as a number


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("---\ntitle: ok\ntags: [a, b\nnext: x\n---\n", 4, "not valid YAML"),
        ("---\ntitle: ok\n  bad indent: x\n---\n", 3, "not valid YAML"),
        ("---\n- a list\n---\n", 2, "is a list, not a mapping"),
        ("---\njust words\n---\n", 2, "is a string, not a mapping"),
        ("+++\ntitle = 'ok'\ntags = [\n+++\n", 3, "not valid TOML"),
        ("+++\ntitle = 'ok'\n= 3\nx = 1\n+++\n", 3, "not valid TOML"),
        ("---\nwhen: 2024-13-45\n---\n", 2, "not valid YAML"),
    ],
)
def test_a_broken_block_names_its_line(text: str, line: int, problem: str):
    front = parse(text)
    assert front.fields == () and front.line == line and problem in (front.problem or "")


def test_bounds_hold_against_large_and_aliased_blocks():
    huge = "---\n" + "".join(f"k{i}: {'x' * 100}\n" for i in range(1000)) + "---\n"
    assert "larger than 64 KiB" in (parse(huge).problem or "")
    many = "---\n" + "".join(f"k{i}: [1, 2, 3]\n" for i in range(500)) + "---\n"
    assert sum(len(f.values) for f in parse(many).fields) == MAX_VALUES
    # A "billion laughs": PyYAML shares the aliased lists; the walk stops at MAX_VALUES.
    bomb = (
        "---\na: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefg", "bcdefgh", strict=True)
        )
        + "---\n"
    )
    fields = parse(bomb).fields
    assert sum(len(f.values) for f in fields) <= MAX_VALUES
    long_value = parse("---\nv: " + "y" * 5000 + "\n---\n").fields[0].values[0].text
    assert len(long_value) == frontmatter.MAX_VALUE_CHARS


def test_only_markdown_files_are_read():
    assert (
        frontmatter.wanted("notes/a.md") and frontmatter.wanted("A.MARKDOWN") and frontmatter.wanted("x.mdx")
    )
    assert not frontmatter.wanted("notes/a.txt") and not frontmatter.wanted("a.rst")


@pytest.mark.parametrize(
    ("text", "op", "folded", "number", "day"),
    [
        ("tags=Python", "=", "python", None, None),
        (" tags = a b ", "=", "a b", None, None),
        ("title='x = y'", "=", "x = y", None, None),
        ("n!=2", "!=", "2", 2.0, None),
        ("date>=2024-05-01", ">=", "2024-05-01", None, "2024-05-01"),
        ("date<2024-05-01", "<", "2024-05-01", None, "2024-05-01"),
        ("weight<=1.5", "<=", "1.5", 1.5, None),
        ("a.b>3", ">", "3", 3.0, None),
        ("x=a=b", "=", "a=b", None, None),
    ],
)
def test_where_conditions(text: str, op: str, folded: str, number: float | None, day: str | None):
    condition = parse_condition(text)
    assert (condition.op, condition.folded, condition.number, condition.day) == (op, folded, number, day)


@pytest.mark.parametrize(
    "text", ["tags", "=x", "tags=", "tags>=", "d>=tomorrow", "d<=2024-02-30", "t<a", "x=a\nb"]
)
def test_bad_where_is_a_usage_error(text: str):
    with pytest.raises(UsageError):
        parse_condition(text)


def test_where_takes_at_most_twenty_conditions():
    assert len(parse_where(["a=1"] * 20)) == 20
    with pytest.raises(UsageError):
        parse_where(["a=1"] * 21)
