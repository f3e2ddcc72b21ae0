"""The names a code chunk defines (chunking/outline.py): what the embed budget keeps at the head of
a code chunk's vector text. Pure functions, table-driven."""

from __future__ import annotations

import time

import pytest

from tansaku.chunking.outline import definitions

CASES = [
    (
        "click/core.py",
        [
            "class Context:",
            "    def invoke(self, callback):",
            "        def helper():",
            "            pass",
            "    async def close(self):",
            "        pass",
            "",
            "def main():",
            "    class Local:",
            "        pass",
        ],
        ["Context", "Context.invoke", "Context.close", "main"],
    ),
    (  # a chunk that starts inside a class: its methods by their own names
        "core.py",
        ["        return value", "    def to_info_dict(self):", "    def __enter__(self):"],
        ["to_info_dict", "__enter__"],
    ),
    (
        "server.go",
        [
            "func (r *Router) Handle(w http.ResponseWriter) {",
            "type Router struct {",
            "func (m *Map[K, V]) Get(k K) V {",
            "func main() {",
        ],
        ["Router.Handle", "Router", "Map.Get", "main"],
    ),
    (
        "lib.rs",
        [
            "pub struct Index {",
            "impl Index {",
            "    pub fn open(path: &Path) -> Self {",
            "        fn helper() {}",
            "    }",
            "}",
            "pub(crate) async fn serve() {}",
        ],
        ["Index", "Index.open", "serve"],
    ),
    (
        "store.ts",
        [
            "export class Store {",
            "  async get(key: string): Promise<V> {",
            "    if (x) {",
            "  }",
            "}",
            "export const load = async (p: string) => {",
            "export function save(a) {",
            "interface Opts {",
        ],
        ["Store", "Store.get", "load", "save", "Opts"],
    ),
    (
        "Index.java",
        ["public class Index {", "    public static Index open(Path p) {", "    private void close() {", "}"],
        ["Index", "Index.open", "Index.close"],
    ),
    (
        "parse.c",
        ["static int parse_header(const char *buf, size_t n)", "{", "  return foo(x);", "struct buffer {"],
        ["parse_header", "buffer"],
    ),
    (
        "cart.rb",
        ["module Shop", "  class Cart", "    def add(item)", "    def self.empty?"],
        ["Shop", "Shop.Cart", "Cart.add", "Cart.empty?"],
    ),
    ("README.md", ["# Install", "def not_code():"], []),  # prose: headings are in its first tokens
    ("notes.txt", ["class Foo:"], []),
]


@pytest.mark.parametrize(("path", "lines", "names"), CASES, ids=[c[0] for c in CASES])
def test_definitions(path: str, lines: list[str], names: list[str]) -> None:
    assert definitions(path, lines) == names


@pytest.mark.parametrize("path", ["x.py", "x.go", "x.rs", "x.ts", "x.java", "x.c", "x.rb"])
def test_a_long_line_costs_no_more_than_its_length(path: str) -> None:
    # Nested quantifiers once made "func (aaaa..." cubic: 800 characters took 0.2 s.
    lines = [start + "a" * 5_000 for start in ("func (", "def ", "class ", "  get ", "public ", "int ", "")]
    started = time.perf_counter()
    assert definitions(path, [line[:n] for line in lines for n in (100, 399, 5_000)]) is not None
    assert time.perf_counter() - started < 1.0
