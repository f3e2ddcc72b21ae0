"""The import graph of src/tansaku (docs/architecture.md, "Layers"): no two modules import each
other, however lazily (TYPE_CHECKING included), and no import climbs a floor. Read with ast, so
nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

import tansaku

ROOT = Path(tansaku.__file__).parent

# Lower layers and what they must never import (module name prefixes).
FLOORS = {
    "tansaku.store": ("tansaku.search", "tansaku.index", "tansaku.hybrid", "tansaku.models"),
    "tansaku.search": (),
    "tansaku.paths": ("tansaku.store",),
}
ABOVE = ("tansaku.cli", "tansaku.serve", "tansaku.render", "tansaku.api")


def _graph() -> dict[str, set[str]]:
    modules: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                imported.add(base)
                imported.update(f"{base}.{alias.name}" for alias in node.names)
        graph[name] = {other for other in imported if other in modules and other != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = [stack.pop()]
            while group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_import_circles() -> None:
    assert _cycles(_graph()) == []


def test_no_import_climbs_a_floor() -> None:
    climbing = []
    for name, imported in _graph().items():
        for lower, forbidden in FLOORS.items():
            if name == lower or name.startswith(lower + "."):
                climbing += [(name, other) for other in imported if other.startswith(forbidden + ABOVE)]
    assert climbing == []
