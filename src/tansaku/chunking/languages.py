"""Which file types are code, which tree-sitter grammar parses them, and what counts as a definition.

Kept free of tree-sitter imports: ``available_grammars`` and the extension lookups must stay cheap.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

CLASS, FUNCTION, TYPE, IMPORT = 100, 90, 80, 60
SCORES = {"class": CLASS, "function": FUNCTION, "type": TYPE, "import": IMPORT}


@dataclass(frozen=True)
class Grammar:
    module: str  # the grammar package, e.g. tree_sitter_python
    function: str  # its function returning the language pointer
    # Query patterns capturing @class, @function, @type or @import. One node type per pattern:
    # an alternation under a field ("value: [(a) (b)]") matched any node in tree-sitter 0.26.
    patterns: tuple[str, ...]
    wrappers: frozenset[str] = frozenset()  # parents that carry a definition's start (decorators...)


_JS = (
    "(class_declaration) @class",
    "(function_declaration) @function",
    "(generator_function_declaration) @function",
    "(method_definition) @function",
    "(lexical_declaration (variable_declarator value: (arrow_function))) @function",
    "(lexical_declaration (variable_declarator value: (function_expression))) @function",
    "(variable_declaration (variable_declarator value: (arrow_function))) @function",
    "(variable_declaration (variable_declarator value: (function_expression))) @function",
    "(import_statement) @import",
)
_TS = (
    *_JS,
    "(abstract_class_declaration) @class",
    "(interface_declaration) @class",
    "(internal_module) @class",
    "(module) @class",
    "(type_alias_declaration) @type",
    "(enum_declaration) @type",
    "(function_signature) @function",
    "(method_signature) @function",
    "(abstract_method_signature) @function",
    "(public_field_definition value: (arrow_function)) @function",
    "(public_field_definition value: (function_expression)) @function",
)
_TS_WRAPPERS = frozenset({"export_statement", "ambient_declaration"})
_C = (
    "(function_definition) @function",
    "(declaration declarator: (function_declarator)) @function",
    "(struct_specifier body: (_)) @class",
    "(union_specifier body: (_)) @class",
    "(enum_specifier body: (_)) @type",
    "(type_definition) @type",
    "(preproc_include) @import",
)

GRAMMARS: dict[str, Grammar] = {
    "python": Grammar(
        "tree_sitter_python",
        "language",
        (
            "(class_definition) @class",
            "(function_definition) @function",
            "(type_alias_statement) @type",
            "(import_statement) @import",
            "(import_from_statement) @import",
            "(future_import_statement) @import",
        ),
        frozenset({"decorated_definition"}),
    ),
    "javascript": Grammar(
        "tree_sitter_javascript",
        "language",
        (
            *_JS,
            "(field_definition value: (arrow_function)) @function",
            "(field_definition value: (function_expression)) @function",
        ),
        frozenset({"export_statement"}),
    ),
    "typescript": Grammar("tree_sitter_typescript", "language_typescript", _TS, _TS_WRAPPERS),
    "tsx": Grammar("tree_sitter_typescript", "language_tsx", _TS, _TS_WRAPPERS),
    "go": Grammar(
        "tree_sitter_go",
        "language",
        (
            "(function_declaration) @function",
            "(method_declaration) @function",
            "(type_declaration (type_spec type: (struct_type))) @class",
            "(type_declaration (type_spec type: (interface_type))) @class",
            "(type_declaration) @type",
            "(import_declaration) @import",
        ),
    ),
    "rust": Grammar(
        "tree_sitter_rust",
        "language",
        (
            "(struct_item) @class",
            "(union_item) @class",
            "(trait_item) @class",
            "(impl_item) @class",
            "(mod_item) @class",
            "(function_item) @function",
            "(function_signature_item) @function",
            "(macro_definition) @function",
            "(enum_item) @type",
            "(type_item) @type",
            "(use_declaration) @import",
            "(extern_crate_declaration) @import",
        ),
    ),
    "java": Grammar(
        "tree_sitter_java",
        "language",
        (
            "(class_declaration) @class",
            "(interface_declaration) @class",
            "(record_declaration) @class",
            "(annotation_type_declaration) @class",
            "(method_declaration) @function",
            "(constructor_declaration) @function",
            "(compact_constructor_declaration) @function",
            "(enum_declaration) @type",
            "(import_declaration) @import",
        ),
    ),
    "c": Grammar("tree_sitter_c", "language", _C, frozenset({"declaration", "type_definition"})),
    "cpp": Grammar(
        "tree_sitter_cpp",
        "language",
        (
            *_C,
            "(field_declaration declarator: (function_declarator)) @function",
            "(class_specifier body: (_)) @class",
            "(namespace_definition) @class",
            "(alias_declaration) @type",
        ),
        frozenset({"declaration", "type_definition", "template_declaration", "field_declaration"}),
    ),
    "ruby": Grammar(
        "tree_sitter_ruby",
        "language",
        (
            "(class) @class",
            "(module) @class",
            "(singleton_class) @class",
            "(method) @function",
            "(singleton_method) @function",
            "(program (call !receiver method: (identifier) @_m"
            ' (#match? @_m "^(require|require_relative)$")) @import)',
        ),
    ),
}

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".rb": "ruby",
}

# Code without a grammar here: chunked with the code line rules (blank lines), never as Markdown,
# where "#" comments would pass for headings.
_OTHER_CODE = """
.kt .kts .swift .scala .sc .cs .fs .fsx .vb .php .sh .bash .zsh .fish .ps1 .lua .pl .pm .r .jl .m .mm
.sql .zig .dart .ex .exs .erl .hrl .hs .ml .mli .clj .cljs .cljc .elm .groovy .gradle .nim .cr .d .v
.sv .vhd .vhdl .asm .s .f90 .f95 .pas .tf .proto .cmake .mk .vim .el .lisp .scm .rake .gemspec .erb
.vue .svelte .css .scss .less .sass
"""
OTHER_CODE = frozenset(_OTHER_CODE.split())


def extension(path: str) -> str:
    return os.path.splitext(path)[1].lower()


def language_for(path: str) -> str | None:
    """The grammar language for ``path``, or None."""
    return EXTENSIONS.get(extension(path))


def is_code(path: str) -> bool:
    ext = extension(path)
    return ext in EXTENSIONS or ext in OTHER_CODE


def available_grammars() -> dict[str, bool]:
    """Language -> whether its grammar (and tree-sitter itself) can be imported; imports nothing."""
    core = importlib.util.find_spec("tree_sitter") is not None
    return {name: core and importlib.util.find_spec(g.module) is not None for name, g in GRAMMARS.items()}
