"""`--where` and `--fields` on the vector side, with the real MiniLM model: vsearch in memory and
through sqlite-vec's KNN, and `query` fusing both lists."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tansaku.search.vector_cache import MEMORY_BUDGET_ENV

from .models_fixture import requires_llama, requires_minilm

pytestmark = [requires_llama, requires_minilm, pytest.mark.both_backends]

FIELDS = Path(__file__).resolve().parent.parent / "fixtures" / "fields"
QUERY = "sharpen the garden shears in the tool shed"


@pytest.fixture
def embedded(cli, model: Path, tmp_path: Path) -> Path:
    target = tmp_path / "garden"
    shutil.copytree(FIELDS, target)
    assert cli("collection", "add", target, "--name", "garden").exit_code == 0
    result = cli("embed", "--json")
    assert result.exit_code == 0, result.stderr
    return target


def stems(data: dict) -> list[str]:
    return [Path(hit["path"]).stem for hit in data["results"]]


@pytest.mark.parametrize("on_disk", [False, True], ids=["in-memory", "sqlite-vec-knn"])
def test_vsearch_filters_before_the_limit(cli, embedded: Path, monkeypatch, on_disk: bool):
    if on_disk:
        monkeypatch.setenv(MEMORY_BUDGET_ENV, "0")  # too small for any vectors: KNN on disk
    everything = cli("vsearch", QUERY, "--all", "--min-score", "0", "--json").json()
    assert stems(everything)[0] == "epsilon"  # the shed note is nearest
    published = cli("vsearch", QUERY, "-n", "1", "--min-score", "0", "--json", "--where", "status=published")
    data = published.json()
    assert len(data["results"]) == 1 and stems(data)[0] in {"beta", "gamma"}
    expected = next(s for s in stems(everything) if s in {"beta", "gamma"})
    assert stems(data) == [expected]  # the best of the documents that pass, not of all
    if not on_disk:
        assert data["total"] == 2
    dated = cli("vsearch", QUERY, "--all", "--min-score", "0", "--json", "--where", "date<2024-06-15").json()
    assert stems(dated) == ["alpha"]


def test_vsearch_shows_fields(cli, embedded: Path):
    data = cli("vsearch", QUERY, "-n", "2", "--min-score", "0", "--json", "--fields").json()
    first = data["results"][0]
    assert first["fields"] == {
        "title": "Epsilon tool shed",
        "tags": "Python",
        "updated": "2024-06-15T10:30:00+00:00",
        "draft": True,
    }
    text = cli("vsearch", QUERY, "-n", "1", "--fields").stdout
    assert "fields: title: Epsilon tool shed · tags: Python" in text


def test_query_filters_both_lists(cli, embedded: Path):
    result = cli(
        "query", QUERY, "--no-expand", "--no-rerank", "--json", "--where", "tags=rust", "--fields", "--all"
    )
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["used"] == "keyword+vector"
    assert stems(data) == ["beta"] and data["results"][0]["fields"]["tags"] == ["rust", "search"]
