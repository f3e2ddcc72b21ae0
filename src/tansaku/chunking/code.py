"""Break points for source code from tree-sitter: definitions, and their names for heading_path.

Grammars load lazily and are cached per language, failures included, so a missing or broken
grammar costs one attempt per process and a warning per file, never an exception.
"""

from __future__ import annotations

import importlib
from typing import Any

from tansaku.chunking.languages import GRAMMARS, SCORES, Grammar
from tansaku.chunking.plan import Plan, Section

_LEADING = frozenset({"comment", "line_comment", "block_comment", "attribute_item"})
_NAME_TYPES = frozenset(
    {
        "identifier",
        "field_identifier",
        "type_identifier",
        "qualified_identifier",
        "destructor_name",
        "operator_name",
        "property_identifier",
        "constant",
        "scope_resolution",
    }
)
# language -> (Language, definitions query, ERROR query), or why it cannot be loaded. Parsers are
# made per call (they are cheap) because one Parser must not be used by two threads at once.
_loaded: dict[str, tuple[Any, Any, Any] | str] = {}


def _load(language: str) -> tuple[Any, Any, Any] | str:
    if language in _loaded:
        return _loaded[language]
    grammar = GRAMMARS[language]
    try:
        import tree_sitter as ts

        module = importlib.import_module(grammar.module)
        lang = ts.Language(getattr(module, grammar.function)())
        ts.Parser(lang)  # fails here, not per file, if the grammar's ABI is unsupported
        query = ts.Query(lang, "\n".join(_valid_patterns(ts, lang, grammar)))
        errors = ts.Query(lang, "(ERROR) @error")
    except ImportError as exc:
        result: tuple[Any, Any, Any] | str = (
            f"no tree-sitter grammar for {language} ({exc.name} not installed)"
        )
    except Exception as exc:  # an ABI mismatch or a broken wheel must not stop chunking
        result = f"tree-sitter grammar for {language} failed to load ({exc})"
    else:
        result = (lang, query, errors)
    _loaded[language] = result
    return result


def _valid_patterns(ts: Any, lang: Any, grammar: Grammar) -> list[str]:
    # Grammar releases rename node types now and then: drop the patterns this one cannot compile
    # instead of losing the language.
    out = []
    for pattern in grammar.patterns:
        try:
            ts.Query(lang, pattern)
        except Exception:
            continue
        out.append(pattern)
    return out


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _declarator_name(node: Any) -> str:
    # C declarators nest (pointer -> function -> identifier); follow them to the name.
    seen = 0
    while node is not None and node.type not in _NAME_TYPES and seen < 16:
        inner = node.child_by_field_name("declarator")
        if inner is None:
            named = [c for c in node.named_children if c.type in _NAME_TYPES or "declarator" in c.type]
            inner = named[-1] if named else None
        node = inner
        seen += 1
    return _text(node)


def _name(node: Any, anchor: Any) -> str:
    kind = node.type
    if kind == "impl_item":
        trait = node.child_by_field_name("trait")
        target = _text(node.child_by_field_name("type"))
        return f"impl {_text(trait)} for {target}" if trait is not None else f"impl {target}"
    if kind in ("lexical_declaration", "variable_declaration"):
        for child in node.named_children:
            if child.type == "variable_declarator":
                return _text(child.child_by_field_name("name"))
    if kind == "type_declaration":
        for child in node.named_children:
            if child.type in ("type_spec", "type_alias"):
                return _text(child.child_by_field_name("name"))
    if kind == "singleton_method":
        return f"{_text(node.child_by_field_name('object'))}.{_text(node.child_by_field_name('name'))}"
    for field in ("name", "property"):
        found = node.child_by_field_name(field)
        if found is not None:
            return _text(found)
    if kind == "namespace_definition":
        return "(anonymous namespace)"
    for candidate in (node, anchor):
        declarator = candidate.child_by_field_name("declarator")
        if declarator is not None:
            return _declarator_name(declarator)
    return ""


def _anchor(node: Any, wrappers: frozenset[str]) -> Any:
    while node.parent is not None and node.parent.type in wrappers:
        node = node.parent
    return node


def _first_row(anchor: Any, lines: list[str]) -> int:
    """The row where the definition begins, counting directly preceding comments and attributes."""
    row = anchor.start_point[0]
    prev = anchor.prev_sibling
    while prev is not None and prev.type in _LEADING and prev.end_point[0] >= row - 1:
        start_row, start_col = prev.start_point
        if lines[start_row].encode("utf-8", "surrogatepass")[:start_col].strip():
            break  # a trailing comment of the previous statement
        row = start_row
        prev = prev.prev_sibling
    return row


def _inside_error(node: Any) -> bool:
    while node is not None:
        if node.is_error:
            return True
        node = node.parent
    return False


def code_plan(text: str, language: str) -> tuple[Plan | None, str | None]:
    """The plan for ``text`` in ``language``, or (None, why) when regex must be used instead."""
    loaded = _load(language)
    if isinstance(loaded, str):
        return None, loaded
    lang, query, error_query = loaded
    import tree_sitter as ts

    data = text.encode("utf-8", "surrogatepass")
    try:
        tree = ts.Parser(lang).parse(data)
    except Exception as exc:
        return None, f"tree-sitter parse failed for {language} ({exc})"
    root = tree.root_node
    warnings: list[str] = []
    # has_error is also set by MISSING nodes, the parser's repair of a small gap (a grammar
    # lagging behind the language, say); only ERROR nodes make definitions unreliable.
    has_errors = root.has_error and bool(ts.QueryCursor(error_query).captures(root))
    if has_errors:
        broken = sum(c.end_byte - c.start_byte for c in root.children if c.is_error)
        if root.is_error or broken * 2 > len(data):
            return None, f"tree-sitter could not parse most of this {language} file"
        warnings.append(f"syntax errors in this {language} file; definitions inside them were ignored")

    lines = text.split("\n")
    starts = [0] * (len(lines) + 1)
    pos = 0
    for i, line in enumerate(lines):
        starts[i] = pos
        pos += len(line) + 1
    starts[len(lines)] = len(text)
    grammar = GRAMMARS[language]
    plan = Plan(strategy=f"ast:{language}", markdown=False, warnings=warnings)
    best: dict[int, tuple[int, Any, Any]] = {}  # anchor id -> (score, captured node, anchor)
    imports: set[int] = set()
    for capture, nodes in ts.QueryCursor(query).captures(root).items():
        score = SCORES.get(capture)
        if score is None:
            continue
        for node in nodes:
            if has_errors and _inside_error(node):
                continue
            anchor = _anchor(node, grammar.wrappers)
            if capture == "import":
                imports.add(anchor.id)
            if anchor.id not in best or score > best[anchor.id][0]:
                best[anchor.id] = (score, node, anchor)
    for score, node, anchor in best.values():
        if score == SCORES["import"]:
            prev = anchor.prev_named_sibling
            if prev is not None and prev.id in imports:
                continue  # only the first import of a block is a break point
        row = _first_row(anchor, lines)
        plan.add_point(starts[row], score)
        if score != SCORES["import"]:
            end_row, end_col = anchor.end_point
            if end_col == 0 and end_row > row:
                end_row -= 1  # the node ends with its newline: the next line is not inside
            name = _name(node, anchor) or f"<{node.type}>"
            plan.sections.append(Section(starts[row], starts[end_row + 1], name))
    plan.points.pop(0, None)
    plan.finish()
    return plan, None
