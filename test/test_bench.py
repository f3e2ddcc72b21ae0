"""The evaluation harness on the tiny fixture set (proves it runs; not a quality gate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import REPO

SET = REPO / "fixtures" / "evals" / "sample-v1.jsonl"


@pytest.mark.usefixtures("indexed")
def test_bench_reports_metrics_per_mode_and_kind(cli, tmp_path: Path):
    record = tmp_path / "record.json"
    result = cli("bench", SET, "--mode", "search", "--record", record, "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["collection"] == "sample"  # from the set's corpus field
    assert data["modes"] == ["search"]
    overall = next(s for s in data["summaries"] if s["kind"] == "all")
    assert overall["queries"] == 8
    assert 0.5 <= overall["hit_at_10"] <= 1.0
    assert overall["hit_at_1"] <= overall["hit_at_3"] <= overall["hit_at_5"] <= overall["hit_at_10"]
    assert {s["kind"] for s in data["summaries"]} == {
        "all",
        "known-item",
        "paraphrase",
        "howto",
        "hard",
        "cjk",
    }
    assert len(data["queries"]) == 8
    for outcome in data["queries"]:
        if outcome["first_relevant_rank"]:
            assert outcome["ranked"][outcome["first_relevant_rank"] - 1] in outcome["relevant"]
    saved = json.loads(record.read_text(encoding="utf-8"))
    rec = saved["record"]
    for key in (
        "tansaku_version",
        "git",
        "schema_version",
        "chunker_version",
        "models",
        "flags",
        "corpus",
        "date",
    ):
        assert key in rec
    assert rec["query_set"]["sha256"]
    assert rec["corpus"]["documents"] == 13
    assert rec["status"]["index_exists"] is True


@pytest.mark.usefixtures("indexed")
def test_unavailable_modes_are_reported_not_scored(cli):
    data = cli("bench", SET, "--json").json()
    # vsearch needs a model; query runs on keyword results alone, and each query says so.
    assert data["modes"] == ["search", "query-fused", "query-expanded", "query"]
    assert [w["code"] for w in data["warnings"]].count("MODE_UNAVAILABLE") == 1
    query_warnings = {code for q in data["queries"] if q["mode"] == "query" for code in q["warnings"]}
    assert "MODEL_MISSING" in query_warnings


def test_a_stale_index_is_reported_as_such(cli, indexed: Path):
    (indexed / "guides" / "new.md").write_text("# New\n\nfresh text\n", encoding="utf-8")
    data = cli("bench", SET, "--mode", "search", "--json").json()
    assert "INDEX_STALE" in [w["code"] for w in data["warnings"]]


def test_a_relevant_path_missing_from_the_index_is_reported(cli, indexed: Path, tmp_path: Path):
    broken = tmp_path / "set.jsonl"
    broken.write_text(
        json.dumps({"id": "x", "query": "restore", "relevant": ["guides/nope.md"], "kind": "hard"}) + "\n",
        encoding="utf-8",
    )
    data = cli("bench", broken, "-c", "sample", "--mode", "search", "--json").json()
    assert "RELEVANT_NOT_INDEXED" in [w["code"] for w in data["warnings"]]
    assert data["queries"][0]["first_relevant_rank"] is None


def test_bench_text_output(cli, indexed: Path):
    out = cli("bench", SET, "--mode", "search").stdout
    assert "mode: search" in out and "HIT@1" in out and "MRR@10" in out


@pytest.mark.parametrize(
    "content, message",
    [
        ("not json\n", "not a judged query"),
        ('{"id": "a", "query": "q", "relevant": []}\n', "lists no relevant"),
        (
            '{"id": "a", "query": "q", "relevant": ["x"]}\n{"id": "a", "query": "r", "relevant": ["y"]}\n',
            "duplicate",
        ),
        ("", "no queries"),
    ],
)
def test_bad_query_sets_are_usage_errors(cli, indexed: Path, tmp_path: Path, content: str, message: str):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content, encoding="utf-8")
    result = cli("bench", bad, "-c", "sample", "--json")
    assert result.exit_code == 2
    assert message in result.error()["message"]


def test_bench_needs_a_collection_when_the_set_names_none(cli, indexed: Path, tmp_path: Path):
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"id": "a", "query": "q", "relevant": ["x"]}\n', encoding="utf-8")
    result = cli("bench", plain, "--json")
    assert result.exit_code == 2
    assert "-c" in result.error()["message"]


def test_a_collapsed_hit_counts_when_any_of_its_paths_is_judged(cli, tmp_path: Path):
    """A page shown once for its copies and translations stands for them all: judged by its
    French path, the English one shown is still a hit at rank 1."""
    docs = tmp_path / "manual"
    for lang, words in (("en", "tune the widget spindle"), ("fr", "régler la broche " * 6)):
        (docs / lang).mkdir(parents=True)
        (docs / lang / "spindle.md").write_text(f"# Spindle\n\n{words}\n", encoding="utf-8")
    (docs / "en" / "other.md").write_text("# Other\n\nnothing about it\n", encoding="utf-8")
    assert cli("collection", "add", docs, "--name", "manual").exit_code == 0
    judged = tmp_path / "set.jsonl"
    judged.write_text(
        json.dumps({"id": "t-1", "query": "spindle", "relevant": ["fr/spindle.md"], "kind": "howto"}) + "\n",
        encoding="utf-8",
    )
    shown = cli("search", "spindle", "-c", "manual", "--json").json()["results"]
    assert [(hit["path"], hit["also_in"]) for hit in shown] == [("en/spindle.md", ["fr"])]
    data = cli("bench", judged, "-c", "manual", "--mode", "search", "--json").json()
    (outcome,) = data["queries"]
    assert outcome["first_relevant_rank"] == 1
    assert outcome["ranked"][0] == "fr/spindle.md"
