"""Bounded work per call (issue 22, item 2): refs per multi-get, query terms, suggestions, a deadline."""

from __future__ import annotations

import functools
import itertools
import string
import threading
import time

import pytest

pytestmark = pytest.mark.usefixtures("indexed")

# A generous ceiling: each of these took 10 s or more before the bounds (on a 6,000-page index).
CEILING_SECONDS = 5.0


def missing_refs(count: int) -> str:
    return ",".join(f"sample/guides/instal{i}.md" for i in range(count))


def distinct_words(count: int) -> list[str]:
    letters = string.ascii_lowercase
    words = ("".join(p) for n in itertools.count(3) for p in itertools.product(letters, repeat=n))
    return list(itertools.islice(words, count))


def long_query() -> str:
    # Real words of the sample first (they match), then 15,000 distinct made-up ones: ~100 KB.
    return " ".join(["backup", "restore", "compression", *distinct_words(15_000)])


def test_multi_get_of_200_missing_refs_is_a_usage_error_naming_the_cap(cli):
    started = time.perf_counter()
    result = cli("multi-get", missing_refs(200), "--json")
    assert time.perf_counter() - started < CEILING_SECONDS
    assert result.exit_code == 2
    error = result.error()
    assert error["code"] == "USAGE"
    assert "200 items" in error["message"] and "at most 100" in error["message"]
    assert result.stdout == ""


def test_multi_get_of_200_star_items_is_a_usage_error(cli):
    result = cli("multi-get", ",".join(["**"] * 200), "--json")
    assert result.exit_code == 2
    assert "at most 100" in result.error()["message"]


def test_api_multi_get_refuses_too_many_refs():
    from tansaku.api import Tansaku
    from tansaku.errors import UsageError

    with pytest.raises(UsageError, match="at most 100"):
        Tansaku().multi_get(missing_refs(200))


def test_only_the_first_misses_get_similar_paths(cli):
    data = cli("multi-get", missing_refs(99) + ",sample/guides/install.md", "--json").json()
    assert [d["virtual_path"] for d in data["documents"]] == ["tansaku://sample/guides/install.md"]
    warnings = data["warnings"]
    assert len(warnings) == 99 and {w["code"] for w in warnings} == {"NO_MATCH"}
    suggested = [w for w in warnings if "similar:" in w["message"]]
    assert len(suggested) == 5
    assert all("tansaku://sample/guides/install.md" in w["message"] for w in suggested)
    # The first ones, in the order given.
    assert [w["message"] for w in warnings[:5]] == [w["message"] for w in suggested]


def test_repeated_globs_list_the_index_once(cli, monkeypatch: pytest.MonkeyPatch):
    from tansaku.store import documents

    calls = []
    real = documents.list_documents

    @functools.wraps(real)  # keeps its @both mark: a PostgreSQL index runs it too
    def counting(conn, collection, prefix=""):
        calls.append(collection)
        return real(conn, collection, prefix)

    monkeypatch.setattr(documents, "list_documents", counting)
    data = cli("multi-get", ",".join(["**"] * 60 + ["sample/notes/*.md"] * 40), "--json").json()
    paths = [d["virtual_path"] for d in data["documents"]]
    assert len(paths) == len(set(paths)) > 10
    assert calls == ["sample"]


def test_a_query_of_15000_distinct_words_is_truncated_with_a_warning(cli):
    started = time.perf_counter()
    result = cli("search", long_query(), "--json")
    assert time.perf_counter() - started < CEILING_SECONDS
    assert result.exit_code == 0, result.stderr
    data = result.json()
    truncated = [w for w in data["warnings"] if w["code"] == "QUERY_TRUNCATED"]
    assert len(truncated) == 1
    assert "dropped 14939" in truncated[0]["message"] and "first 64" in truncated[0]["message"]
    assert data["results"], "the words kept still find the backup guide"
    # Every format carries it.
    text = cli("search", long_query())
    assert "dropped 14939" in text.stdout + text.stderr


def test_api_search_of_15000_words_warns():
    from tansaku.api import Tansaku

    started = time.perf_counter()
    result = Tansaku().search(long_query())
    assert time.perf_counter() - started < CEILING_SECONDS
    assert [w.code for w in result.warnings].count("QUERY_TRUNCATED") == 1


def test_a_short_query_has_no_truncation_warning(cli):
    data = cli("search", "backup restore", "--json").json()
    assert "QUERY_TRUNCATED" not in [w["code"] for w in data["warnings"]]


def test_the_embedder_reads_a_bounded_query():
    from tansaku.limits import MAX_MODEL_QUERY_CHARS, MAX_QUERY_TERMS
    from tansaku.search.query import model_text

    text = model_text(long_query())
    assert len(text) <= MAX_MODEL_QUERY_CHARS
    assert len(text.split()) <= MAX_QUERY_TERMS
    assert text.startswith("backup restore compression ")
    assert model_text("how do I restore a backup") == "how do I restore a backup"


def test_a_deadline_stops_multi_get_and_search():
    from tansaku import limits
    from tansaku.api import Tansaku

    api = Tansaku()
    with limits.bounded(0.0), pytest.raises(limits.WorkExpired) as expired:
        api.multi_get("sample/**")
    assert expired.value.code == "REQUEST_TIMEOUT" and expired.value.exit_code == 4
    assert "limit of 0 s" in expired.value.message
    with limits.bounded(0.0), pytest.raises(limits.WorkExpired):
        api.search("backup restore")
    # Outside any bound the same calls work.
    assert api.multi_get("sample/**").documents


def test_a_cancelled_call_stops():
    from tansaku import limits
    from tansaku.api import Tansaku

    gone = threading.Event()
    gone.set()
    with limits.bounded(None, gone), pytest.raises(limits.WorkCancelled) as cancelled:
        Tansaku().multi_get(missing_refs(50))
    assert cancelled.value.code == "REQUEST_CANCELLED"


def test_bounds_nest_and_end_with_their_block():
    from tansaku import limits

    limits.check()
    flag = threading.Event()
    with limits.bounded(60.0, flag):
        with limits.bounded(None):
            limits.check()
            flag.set()
            with pytest.raises(limits.WorkCancelled):
                limits.check()
        flag.clear()
        with limits.bounded(0.0), pytest.raises(limits.WorkExpired):
            limits.check()
    limits.check()


def test_the_caps_are_stated_in_help(cli):
    assert "100" in cli("multi-get", "--help").stdout
    for command in ("search", "vsearch", "query"):
        assert "64" in cli(command, "--help").stdout, command
