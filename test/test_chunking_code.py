"""Code chunking with tree-sitter: cuts land on definitions, heading paths name them, fallbacks warn.

Definition lines are found here with per-language regular expressions written for the fixture
files (not with tree-sitter), so the test checks the chunker against an independent reading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import tansaku.chunking.code as code_module
from tansaku.chunking import ChunkParams, chunk_text
from test.test_chunking import check_invariants

CODE = Path(__file__).resolve().parent.parent / "fixtures" / "chunking" / "code"
PARAMS = ChunkParams(max_tokens=300, overlap_tokens=45, window_tokens=100, strategy="auto")
CHARS_PER_TOKEN = 4  # the fixtures are ASCII, where the estimate is exactly this

_KEYWORDS = r"(?!(?:if|for|while|switch|catch|return|throw|else|do|new|function|await|typeof)\b)"
_CPP_KEYWORDS = r"(?!(?:if|for|while|switch|catch|return|throw|else|do|new|delete|sizeof|case)\b)"
_JS_DEFS = [
    r"^\s*(export\s+(default\s+)?)?(async\s+)?(function\b|class\s)",
    r"^\s*(export\s+)?(const|let|var)\s+\w+\s*=\s*(async\s*)?(<.*>)?(\(.*\)|\w+)\s*(:[^=]+)?=>",
    r"^\s*(export\s+)?(const|let|var)\s+\w+\s*=\s*(async\s+)?function\b",
    # methods (classes and object literals), getters, constructors
    r"^\s+((static|async|get|set|\*)\s+)*" + _KEYWORDS + r"[A-Za-z_$][\w$]*\s*\(.*\)\s*\{\s*$",
]
_TS_DEFS = [
    *_JS_DEFS,
    r"^\s*(export\s+)?(declare\s+)?(abstract\s+)?(class|interface|enum|namespace|module)\s",
    r"^\s*(export\s+)?type\s+\w+",
    r"^\s+((public|private|protected|static|readonly|async|abstract|get|set|override)\s+)*"
    + _KEYWORDS
    # with a body, a signature with a return type (interfaces, abstract), or parameters to follow
    + r"[A-Za-z_$][\w$]*\??\s*(<.*>)?\((.*\)\s*(:\s*[^=]+?)?\s*\{|.*\)\s*:\s*[^=]+;|)\s*$",
]
_CPP_TYPE = r"[\w:<>,\*&]+(\s*[\*&])?"
_CPP_MODS = r"((static|virtual|inline|explicit|constexpr|friend|const)\s+)*"


@dataclass(frozen=True)
class Lang:
    name: str
    defs: list[str]  # a line that starts a definition (class, function, type...)
    prefix: str  # comment, decorator or attribute lines that belong to the definition below
    imports: str
    expected_path: tuple[str, ...]  # a heading path that some chunk must start in


LANGS = {
    "jobs.py": Lang(
        "python", [r"^\s*(async\s+def|def|class)\s"], r"^\s*(#|@)", r"^(import|from)\s", ("Store", "claim")
    ),
    "router.js": Lang("javascript", _JS_DEFS, r"^\s*(//|/\*|\*)", r"^import\s", ("Router", "handle")),
    "cache.ts": Lang("typescript", _TS_DEFS, r"^\s*(//|/\*|\*)", r"^import\s", ("Cache", "get")),
    "TaskBoard.tsx": Lang("tsx", _TS_DEFS, r"^\s*(//|/\*|\*)", r"^import\s", ("boardReducer",)),
    "ratelimit.go": Lang("go", [r"^(func|type)\s"], r"^\s*//", r"^import\s", ("Allow",)),
    "inventory.rs": Lang(
        "rust",
        [r"^\s*(pub(\([^)]*\))?\s+)?((async|unsafe|const)\s+)*(fn|struct|enum|trait|impl|mod|type|union)\b"],
        r"^\s*(//|#\[)",
        r"^\s*(pub\s+)?use\s",
        ("impl Inventory", "apply"),
    ),
    "Library.java": Lang(
        "java",
        [
            r"^\s*((public|private|protected|static|final|abstract|sealed)\s+)*(class|interface|enum|record)\s",
            r"^\s*((public|private|protected|static|final|abstract|synchronized|default)\s+)+"
            r"[\w<>\[\],.? ]+\s+\w+\s*\(",
            r"^\s*((public|private|protected)\s+)?[A-Z]\w*\s*\(.*\)\s*\{$",  # constructors
            r"^\s*public\s+[A-Z]\w*\s*\{$",  # compact record constructors
            r"^\s+void\s+\w+\s*\(",  # interface methods
        ],
        r"^\s*(//|/\*|\*|@)",
        r"^import\s",
        ("Library", "lend"),
    ),
    "ringbuf.c": Lang(
        "c",
        [
            r"^((static|inline|extern|const|unsigned|struct|enum|union)\s+)*[A-Za-z_]\w*[\s\*]+\**[A-Za-z_]\w*\s*\(",
            r"^(typedef\s|(struct|enum|union)\s+\w+\s*\{)",
        ],
        r"^\s*(//|/\*|\*)",
        r"^#include",
        ("rb_read_line",),
    ),
    "graph.cpp": Lang(
        "cpp",
        [
            r"^\s*(class|struct|union|namespace)\s+\w+(?!.*;\s*$)",
            r"^\s*enum(\s+class)?\s+\w+.*\{",
            r"^\s*using\s+\w+\s*=",
            # typed functions and declarations
            r"^\s*"
            + _CPP_MODS
            + _CPP_KEYWORDS
            + _CPP_TYPE
            + r"\s+[~\w:]+\s*\(.*\)\s*(const)?\s*(override)?\s*[{;:]",
            # constructors and destructors: no return type, so they must open a body or initializers
            r"^\s*" + _CPP_MODS + _CPP_KEYWORDS + r"~?[A-Z]\w*\s*\(.*\)\s*(:.*|\{.*|=\s*(default|delete);)?$",
        ],
        r"^\s*(//|/\*|\*|template\s*<)",
        r"^#include",
        ("graphs", "Graph", "name"),
    ),
    "feeds.rb": Lang(
        "ruby", [r"^\s*(def|class|module)\s"], r"^\s*#", r"^require", ("Feeds", "Parser", "parse_rss")
    ),
}


def _starts(lines: list[str], lang: Lang) -> tuple[set[int], set[int]]:
    """0-based lines where definitions begin (with their comments and decorators), and imports."""

    def begin(i: int) -> int:
        while i > 0 and lines[i - 1].strip() and re.match(lang.prefix, lines[i - 1]):
            i -= 1
        return i

    defs = {begin(i) for i, line in enumerate(lines) if any(re.match(p, line) for p in lang.defs)}
    imports = {begin(i) for i, line in enumerate(lines) if re.match(lang.imports, line)}
    return defs, imports


@pytest.mark.parametrize(
    "params", [PARAMS, ChunkParams(200, 30, 80, "auto"), ChunkParams(450, 60, 150, "auto")], ids=str
)
@pytest.mark.parametrize("name", sorted(LANGS))
def test_cuts_land_on_definitions(name: str, params: ChunkParams) -> None:
    lang = LANGS[name]
    text = (CODE / name).read_text(encoding="utf-8")
    assert text.isascii() and 2100 <= len(text) / CHARS_PER_TOKEN <= 2700  # ~2,500 tokens
    result = chunk_text(text, name, params)
    assert result.strategy_used == f"ast:{lang.name}"
    assert result.warnings == ()
    check_invariants(text, result, params)
    chunks = result.chunks
    assert len(chunks) >= 4

    lines = text.split("\n")
    line_start = [0]
    for line in lines:
        line_start.append(line_start[-1] + len(line) + 1)
    defs, imports = _starts(lines, lang)
    def_offsets = sorted(line_start[i] for i in defs)
    accepted = {line_start[i] for i in defs | imports}
    on_definition = 0
    for i, chunk in enumerate(chunks[:-1]):
        lo = max(chunk.start_char, chunks[i - 1].end_char if i else 0)
        target = chunk.start_char + params.max_tokens * CHARS_PER_TOKEN
        window_start = max(target - params.window_tokens * CHARS_PER_TOKEN, lo + 1)
        forced = not any(window_start <= p <= target for p in def_offsets)
        if not forced:
            assert chunk.end_char in accepted, (name, i, lines[chunk.end_line][:60])
            on_definition += 1
    assert all(all(part for part in c.heading_path) for c in chunks)
    if params == PARAMS:
        assert on_definition >= len(chunks) // 2, "most windows should offer a definition"
        assert lang.expected_path in {c.heading_path for c in chunks}


def test_regex_strategy_ignores_definitions() -> None:
    text = (CODE / "jobs.py").read_text(encoding="utf-8")
    result = chunk_text(text, "jobs.py", ChunkParams(300, 45, 100, "regex"))
    assert result.strategy_used == "regex" and result.warnings == ()
    assert all(c.heading_path == () for c in result.chunks)


def test_language_without_grammar_falls_back_with_a_warning() -> None:
    text = 'fun main() {\n    println("hi")\n}\n\n' * 200
    result = chunk_text(text, "Main.kt", PARAMS)
    assert result.strategy_used == "regex"
    assert result.warnings == ("no tree-sitter grammar for .kt; used regex",)
    check_invariants(text, result, PARAMS)


def test_missing_grammar_package_falls_back_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(code_module._loaded, "python", "no tree-sitter grammar for python (nope)")
    text = (CODE / "jobs.py").read_text(encoding="utf-8")
    result = chunk_text(text, "jobs.py", PARAMS)
    assert result.strategy_used == "regex"
    assert result.warnings == ("no tree-sitter grammar for python (nope); used regex",)
    check_invariants(text, result, PARAMS)


def test_unloadable_grammar_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(code_module._loaded, "go", raising=False)
    monkeypatch.setattr(code_module.importlib, "import_module", _raise_import_error)
    try:
        result = chunk_text("package x\n\nfunc A() {}\n", "a.go", PARAMS)
    finally:
        code_module._loaded.pop("go", None)
    assert result.strategy_used == "regex"
    assert result.warnings and "tree_sitter_go" in result.warnings[0]


def _raise_import_error(name: str) -> None:
    raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def test_unparsable_code_falls_back_to_regex() -> None:
    text = "}}} ((( def class ::: <<<\n" * 300
    result = chunk_text(text, "broken.py", PARAMS)
    assert result.strategy_used == "regex"
    assert result.warnings == ("tree-sitter could not parse most of this python file; used regex",)
    check_invariants(text, result, PARAMS)


def test_local_syntax_errors_keep_the_ast_with_a_warning() -> None:
    good = (CODE / "jobs.py").read_text(encoding="utf-8")
    text = good.replace("def drain(", "def drain(((", 1)
    result = chunk_text(text, "jobs.py", PARAMS)
    assert result.strategy_used == "ast:python"
    assert result.warnings == ("syntax errors in this python file; definitions inside them were ignored",)
    check_invariants(text, result, PARAMS)


def test_small_code_file_is_one_chunk_with_its_path() -> None:
    text = "class Greeter:\n    def hello(self):\n        return 'hi'\n"
    result = chunk_text(text, "greet.py", PARAMS)
    assert result.strategy_used == "ast:python"
    (chunk,) = result.chunks
    assert chunk.heading_path == ("Greeter",)


def test_auto_on_markdown_is_regex() -> None:
    text = "# Title\n\n" + "Some prose here.\n\n" * 400
    result = chunk_text(text, "notes.md", PARAMS)
    assert result.strategy_used == "regex" and result.warnings == ()
