"""Start-up cost of `tansaku search`: what it imports and builds, and that deferring it changed nothing.

tansaku.types builds most of its dataclasses on first look-up rather than at import (building one
runs ``exec`` for each generated method). These tests pin down both halves of that: a keyword
search builds none of the deferred classes and imports none of the modules only writes need, and a
deferred class, once looked up, is the same dataclass ``@dataclass`` makes at import.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tansaku.types as types_module
from tansaku import types
from tansaku.cli import main as cli_main
from tansaku.cli.common import CommandParser

SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "sample"

# What a keyword search builds; everything else in tansaku.types is deferred.
SEARCH_TYPES = {"Notice", "Collection", "Snippet", "Hit", "SearchResult"}
# Imported only by commands that need them (writes, collection add, completion), never by a search.
NOT_FOR_SEARCH = {
    "tempfile",
    "tomli_w",
    "tansaku.config.masks",
    "tansaku.index.progress",
    "argcomplete",  # only when a shell asks for completions
    "tansaku.sources.formats",  # reading PDF, HTML, Word, EPUB files: updates only
    "tansaku.store.extractions",  # a hit's PDF page: only when a result is a PDF
    "pypdfium2",
}

PROBE = """
import io, sys
from tansaku.cli.main import main
real, sys.stdout = sys.stdout, io.StringIO()
code = main(["search", "backup", "--format", sys.argv[1]])
sys.stdout = real
import tansaku.types as t
built = sorted(name for name in t._DEFERRED if name in vars(t))
print(code, built, sorted(m for m in {not_for_search!r} if m in sys.modules))
"""


def _deferred_names() -> set[str]:
    return set(types_module._DEFERRED)


def test_only_the_search_types_are_built_at_import():
    code = "import sys, tansaku.types as t; print(sorted(n for n in t._DEFERRED if n in vars(t)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    classes = {n for n in dir(types) if dataclasses.is_dataclass(getattr(types, n))}
    assert classes - _deferred_names() == SEARCH_TYPES


@pytest.mark.sqlite_only("what a search on a SQLite file imports (a database's needs psycopg)")
@pytest.mark.parametrize("fmt", ["cli", "csv", "md", "xml", "files"])
def test_search_builds_no_deferred_type_and_imports_no_write_module(tmp_path: Path, fmt: str):
    sample = tmp_path / "s"
    shutil.copytree(SAMPLE, sample)
    env = {
        **os.environ,
        "TANSAKU_CONFIG_DIR": str(tmp_path / "config"),
        "TANSAKU_INDEX_PATH": str(tmp_path / "index.sqlite"),
    }
    add = [sys.executable, "-m", "tansaku", "collection", "add", str(sample), "--name", "s"]
    subprocess.run(add, env=env, capture_output=True, check=True)
    probe = PROBE.format(not_for_search=sorted(NOT_FOR_SEARCH))
    result = subprocess.run(
        [sys.executable, "-c", probe, fmt], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "0 [] []", result.stderr


@pytest.mark.parametrize("name", sorted(types_module._DEFERRED))
def test_a_deferred_type_is_an_ordinary_dataclass_once_looked_up(name: str):
    cls = getattr(types, name)
    body, options = types_module._DEFERRED[name]
    assert cls is body  # built in place: one class object, whichever way it is reached
    assert cls is getattr(types, name)
    assert name in vars(types_module)
    assert name in dir(types)
    assert dataclasses.is_dataclass(cls)
    assert cls.__dataclass_params__.frozen is options["frozen"]  # type: ignore[attr-defined]
    assert cls.__module__ == "tansaku.types" and cls.__qualname__ == name
    assert pickle.loads(pickle.dumps(cls)) is cls


def test_deferred_instances_behave_like_dataclasses():
    from tansaku.types import CollectionUpdate, DocumentSlice, UpdateReport

    doc = DocumentSlice(
        "a1b2c3", "c", "p.md", "tansaku://c/p.md", "/x/p.md", "T", (), 10, 2, 1, ("l",), False
    )
    assert doc == dataclasses.replace(doc) and hash(doc) == hash(dataclasses.replace(doc))
    assert repr(doc).startswith("DocumentSlice(docid='a1b2c3', collection='c'")
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.size = 3  # type: ignore[misc]
    report = UpdateReport(dry_run=False, collections=[CollectionUpdate("c", added=["a.md"])])
    assert report.ok and dataclasses.asdict(report)["collections"][0]["added"] == ["a.md"]
    assert pickle.loads(pickle.dumps(report)) == report
    assert CollectionUpdate("c").added is not CollectionUpdate("c").added  # default_factory


def test_unknown_names_still_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'NoSuchType'"):
        types.NoSuchType  # noqa: B018
    with pytest.raises(ImportError):
        from tansaku.types import NoSuchType  # type: ignore[attr-defined]  # noqa: F401


def test_api_still_exports_collection_update():
    import tansaku.api

    assert tansaku.api.CollectionUpdate is types.CollectionUpdate
    assert set(tansaku.api.__all__) == {"CollectionUpdate", "Tansaku"}


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    (action,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(action.choices)


def test_every_command_is_mapped_to_the_module_that_registers_it():
    # A command missing from the map would still run, but only through the slow full parser.
    assert set(cli_main._COMMAND_GROUPS) == _commands(cli_main.build_parser())
    for module in cli_main._GROUPS:
        parser = argparse.ArgumentParser()
        module.register(parser.add_subparsers(parser_class=CommandParser))
        mapped = {name for name, owner in cli_main._COMMAND_GROUPS.items() if owner is module}
        assert _commands(parser) == mapped, module.__name__


@pytest.mark.parametrize(
    ("argv", "group"),
    [
        (["search", "x"], "search"),
        (["--index", "work", "chunks", "a.md"], "search"),
        (["--index=work", "ls"], "collections"),
        (["context", "list"], "admin"),
        (["vsearch", "x"], "vectors"),
        (["-h"], None),
        (["--version"], None),
        (["--ind", "work", "search", "x"], None),  # argparse accepts the prefix; we do not guess
        (["--index", "-5", "search", "x"], None),
        (["serch", "x"], None),
        ([], None),
    ],
)
def test_command_group(argv: list[str], group: str | None):
    found = cli_main._command_group(argv)
    assert (found.__name__.rsplit(".", 1)[-1] if found else None) == group


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[object, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            result: object = sorted(vars(parser.parse_args(argv)).items())
        except SystemExit as exc:
            result = exc.code
    return result, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        "search restore -laptop --json",
        "search",
        "search -h",
        "--index w search -n x y",
        "get a.md --bogus",
        "collection bogus",
        "context add /",
        "models",
        "bench s.jsonl --mode nope",
        "serch x",
        "--index",
        "--index -5 search x",
        "-h",
    ],
)
def test_the_narrowed_parser_parses_and_fails_like_the_full_one(argv: str):
    words = argv.split()
    assert _parse(cli_main.build_parser(words), words) == _parse(cli_main.build_parser(), words)


REGISTERED_PROBE = """
import argparse, io, sys
import tansaku.cli.main as m
from tansaku.text import cjk
built, real_build = [], m.build_parser
def spy(argv=None):
    built.append(real_build(argv))
    return built[-1]
m.build_parser = spy
real, sys.stdout = sys.stdout, io.StringIO()
code = m.main(["search", '"nightly backups"', "restore", "--json"])
sys.stdout = real
(sub,) = [a for a in built[0]._actions if isinstance(a, argparse._SubParsersAction)]
print(code, sorted(sub.choices), cjk._cjk_run.cache_info().currsize, cjk._cjk_char.cache_info().currsize)
"""


def test_search_builds_only_its_group_and_compiles_no_cjk_pattern(tmp_path: Path):
    sample = tmp_path / "s"
    shutil.copytree(SAMPLE, sample)
    env = {
        **os.environ,
        "TANSAKU_CONFIG_DIR": str(tmp_path / "config"),
        "TANSAKU_INDEX_PATH": str(tmp_path / "index.sqlite"),
    }
    add = [sys.executable, "-m", "tansaku", "collection", "add", str(sample), "--name", "s"]
    subprocess.run(add, env=env, capture_output=True, check=True)
    probe = [sys.executable, "-c", REGISTERED_PROBE]
    result = subprocess.run(probe, env=env, capture_output=True, text=True)
    assert result.stdout.strip() == "0 ['chunks', 'get', 'multi-get', 'search'] 0 0", result.stderr


def test_cjk_patterns_still_apply_to_cjk_text():
    from tansaku.text.cjk import has_cjk, segment, segment_query_words

    assert has_cjk("backup 復元") and not has_cjk("backup") and not has_cjk("café")
    assert segment_query_words("a\tb  c\n") == ["a", "b", "c"]
    assert segment_query_words("restore 復元") == ["restore", *segment_query_words("復元")]
    assert segment("x復元y").startswith("x ") and segment("x復元y").endswith(" y")
