"""The names a chunk of source code defines, in order: what a developer types to find it.

The full pass embeds only each chunk's first tokens (index/embed.py: EMBED_BUDGET), so a function
defined past them is invisible to the vector side. Put at the head of the embedded text, the
chunk's definitions keep those names in its vector: measured on click's sources with
EmbeddingGemma, `vsearch` on exact names went from 0.736 to 0.851 MRR@10 (evals/RESULTS-embed.md,
"Definitions at the head of code chunks"). Headings in prose did not pay (they are mostly in the
first tokens already), so prose gets no outline.

Line patterns, not a parser: this runs for every code chunk of every `embed`, and tree-sitter is
optional. A name can be missed or a false one added; it only nudges a vector.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .languages import language_for

MAX_NAMES = 40
MAX_LINE = 400  # a definition fits on a line this long; longer lines (minified, data) are skipped
LABEL = "Contents: "

# Each pattern: group "indent", group "kind" (def/class/...: "class"-like kinds open a scope whose
# members are named Owner.member), and group "name".
_IDENT = r"[A-Za-z_$][\w$]*"
_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "python": (re.compile(rf"^(?P<indent>\s*)(?:async\s+)?(?P<kind>def|class)\s+(?P<name>{_IDENT})"),),
    "ruby": (
        re.compile(
            r"^(?P<indent>\s*)(?P<kind>def|class|module)\s+(?:self\.)?(?P<name>[A-Za-z_][\w:]*[?!=]?)"
        ),
    ),
    "javascript": (
        re.compile(
            rf"^(?P<indent>\s*)(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?"
            rf"(?P<kind>function\*?|class|interface|type|enum|namespace)\s+(?P<name>{_IDENT})"
        ),
        re.compile(
            rf"^(?P<indent>\s*)(?:export\s+)?(?P<kind>const|let|var)\s+(?P<name>{_IDENT})\s*"
            rf"(?::[^=]+)?=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|{_IDENT}\s*=>)"
        ),
        re.compile(
            rf"^(?P<indent>\s+)(?P<kind>)(?:(?:public|private|protected|static|async|readonly|get|set)\s+)*"
            rf"(?P<name>(?!(?:if|for|while|switch|catch|return|function|else|do|with)\b){_IDENT})\s*\([^)]*\)\s*(?::[^{{]+)?\{{"
        ),
    ),
    "go": (
        re.compile(rf"^(?P<indent>)(?P<kind>func)\s*(?:\((?P<receiver>[^)]*)\)\s*)?(?P<name>{_IDENT})"),
        re.compile(rf"^(?P<indent>)(?P<kind>type)\s+(?P<name>{_IDENT})"),
    ),
    "rust": (
        re.compile(
            rf"^(?P<indent>\s*)(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|unsafe|const|extern(?:\s+\"\w+\")?)\s+)*"
            rf"(?P<kind>fn|struct|enum|trait|mod|type|union)\s+(?P<name>{_IDENT})"
        ),
        re.compile(
            rf"^(?P<indent>\s*)(?P<kind>impl)(?:<[^>]*>)?\s+(?:{_IDENT}(?:<[^>]*>)?\s+for\s+)?(?P<name>{_IDENT})"
        ),
    ),
    "java": (
        re.compile(
            rf"^(?P<indent>\s*)(?:(?:public|private|protected|static|final|abstract|sealed|non-sealed)\s+)*"
            rf"(?P<kind>class|interface|enum|record|@interface)\s+(?P<name>{_IDENT})"
        ),
        re.compile(
            rf"^(?P<indent>\s+)(?P<kind>)(?:(?:public|private|protected|static|final|abstract|synchronized|default)\s+)+"
            rf"(?:[\w<>\[\],.?]++\s++)+(?P<name>{_IDENT})\s*\("
        ),
    ),
    "c": (
        re.compile(
            rf"^(?P<indent>)(?:typedef\s+)?(?P<kind>struct|union|enum|class|namespace)\s+(?P<name>{_IDENT})\s*(?:[:{{]|$)"
        ),
        re.compile(
            r"^(?P<indent>)(?P<kind>)(?!(?:return|if|for|while|switch|else|typedef)\b)"
            r"(?:[\w\*&:<>,]++[\s\*&]++)+[\*&]*(?P<name>[A-Za-z_~][\w:~]*)\s*\([^;]*$"
        ),
    ),
}
_PATTERNS["typescript"] = _PATTERNS["tsx"] = _PATTERNS["javascript"]
_PATTERNS["cpp"] = _PATTERNS["c"]
_IDENTS = re.compile(r"[A-Za-z_]\w*")
_SCOPES = frozenset(
    {"class", "interface", "module", "impl", "trait", "struct", "enum", "record", "namespace"}
)
_FUNCTIONS = frozenset({"def", "function", "function*", "fn", "func", "const", "let", "var", ""})


def definitions(path: str, lines: Sequence[str]) -> list[str]:
    """The names ``lines`` (a chunk of the file at ``path``) define, in order, each once: classes
    and functions, a class's members as ``Class.member`` (Go: ``Type.Method``), never a function
    nested in a function. Empty for prose and for code in a language without patterns."""
    patterns = _PATTERNS.get(language_for(path) or "")
    if not patterns:
        return []
    names: list[str] = []
    scopes: list[tuple[int, str, str]] = []  # (indent, kind, name) of what encloses the line
    for line in lines:
        if len(line) > MAX_LINE:
            continue
        found = next((m for m in (p.match(line) for p in patterns) if m), None)
        if found is None:
            continue
        indent, kind, name = len(found["indent"].expandtabs()), found["kind"], found["name"]
        while scopes and scopes[-1][0] >= indent:
            scopes.pop()
        if any(k in _FUNCTIONS for _, k, _ in scopes):
            continue  # a helper inside a function is not a name a reader looks up
        enclosing = next((n for _, k, n in reversed(scopes) if k in _SCOPES), None)
        receiver = _IDENTS.findall((found.groupdict().get("receiver") or "").split("[")[0])
        owner = receiver[-1] if receiver else enclosing
        scopes.append((indent, kind, name))
        names.append(f"{owner}.{name}" if owner else name)
    return list(dict.fromkeys(names))
