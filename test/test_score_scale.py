"""Keyword scores on one scale: a user can threshold on them, and files and sessions merge by them.

Issue 23: every hit scored 0.85-0.98, a page lacking the query's rarest word among them, and a
session holding that word ranked below such pages when files and sessions were searched together
(turn scores were FTS5's bm25 over the turns, file scores BM25 over the documents).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tansaku.search.score_scale import evidence_of, reference, relative

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"
REDIS_SESSION = "-home-mei-api/a1c0e5d2-6b3f-4e21-9d7a-3f5b8c2e1a01.jsonl"
Cli = Callable[..., Any]

# Pages like random(4) and tcp(7): connections and pools, many times, never Redis.
POOL_PAGE = """# random - kernel random number source devices

The kernel random number generator gathers environmental noise into an entropy pool. The pool
is read by every connection that asks for random bytes; the pool size is fixed. When the entropy
pool is low, a read blocks until the pool refills. Each connection to the pool counts its reads.

## Pool size

The pool holds 4096 bits. Connections opened early in boot read from a pool not yet seeded.
"""
TCP_PAGE = """# tcp - TCP protocol

A connection is opened with connect. The connection backlog holds pending connections; each
connection has a pool of buffers. Connection timeouts and the connection pool of listen sockets
are set with sysctl. Closing a connection frees its pool entry.
"""
FILLER = [
    "# ls - list directory contents\n\nList information about the files in a directory.\n",
    "# cp - copy files\n\nCopy a source file to a destination, or many files into a directory.\n",
    "# mv - move files\n\nRename a source to a destination, or move files into a directory.\n",
    "# rm - remove files\n\nRemove each given file; directories need the recursive option.\n",
    "# cat - concatenate files\n\nConcatenate files and print them on the standard output.\n",
    "# du - disk usage\n\nSummarize the disk usage of each file, recursively for directories.\n",
]


def ok(result: Any) -> Any:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.json()


@pytest.fixture
def pages_and_sessions(cli: Cli, tmp_path: Path) -> Path:
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "random.4.md").write_text(POOL_PAGE)
    (pages / "tcp.7.md").write_text(TCP_PAGE)
    # Many pages, as a man-page collection has: the pool pages' words are rare among them, so on
    # the old scales their BM25 sums dwarfed the turns' (a small population, common words).
    for number in range(300):
        (pages / f"page{number}.md").write_text(FILLER[number % len(FILLER)] + f"\nSee also page {number}.\n")
    shutil.copytree(FIXTURES / "mixed" / "claude", tmp_path / "claude")
    ok(cli("collection", "add", pages, "--name", "pages", "--json"))
    ok(cli("collection", "add", "--type", "claude", tmp_path / "claude", "--json"))
    return tmp_path


def scored(cli: Cli, *args: str) -> list[tuple[str, float]]:
    data = ok(cli("search", *args, "--all", "--json"))
    return [(f"{hit['collection']}/{hit['path']}", hit["score"]) for hit in data["results"]]


@pytest.mark.parametrize("level", ["turn", "run", "session", "project"])
@pytest.mark.parametrize("query", ["redis connection pool", "redis too many connections"])
def test_the_only_session_holding_the_rare_word_ranks_above_pages_that_lack_it(
    cli: Cli, pages_and_sessions: Path, level: str, query: str
):
    hits = scored(cli, query, "--level", level)
    assert hits, "something matches"
    assert hits[0][0] == f"claude/{REDIS_SESSION}", hits[:3]
    pages = [score for path, score in hits if path.startswith("pages/")]
    assert pages and max(pages) < hits[0][1]


def test_a_page_lacking_the_rarest_word_scores_low_so_min_score_means_something(
    cli: Cli, pages_and_sessions: Path
):
    # A session is scored as a document: the same scorer, the same scale as the pages.
    hits = dict(scored(cli, "redis connection pool", "--level", "session"))
    assert hits[f"claude/{REDIS_SESSION}"] >= 0.5
    # random(4) holds "pool" eight times and "connection" three: without "redis" it has less than
    # the evidence of a page holding each word once (on the old scale it scored about 0.9).
    assert hits["pages/random.4.md"] < 0.5
    kept = scored(cli, "redis connection pool", "--level", "session", "--min-score", "0.5")
    assert [path for path, _ in kept] == [f"claude/{REDIS_SESSION}"]


def test_session_scores_at_every_level_share_the_file_scale(cli: Cli, pages_and_sessions: Path):
    # The best unit of the best session scores what the session scores as a document.
    document = dict(scored(cli, "redis connection pool", "--level", "session"))[f"claude/{REDIS_SESSION}"]
    for level in ("turn", "run", "project"):
        best = scored(cli, "redis connection pool", "--level", level)[0]
        assert best == (f"claude/{REDIS_SESSION}", pytest.approx(document, abs=1e-4)), level
    turns = [s for p, s in scored(cli, "redis connection pool", "--level", "turn") if p.startswith("claude/")]
    assert turns == sorted(turns, reverse=True) and turns[-1] < turns[0]


def test_the_scale_is_half_at_the_reference_and_monotone():
    assert reference([1.5, 2.5]) == 4.0
    assert relative(4.0, 4.0) == pytest.approx(0.5)
    assert relative(12.0, 4.0) == pytest.approx(0.75)
    assert relative(0.0, 4.0) == 0.0
    assert relative(float("inf"), 4.0) == 1.0
    scores = [relative(x, 3.0) for x in (0.1, 1, 2, 5, 50)]
    assert scores == sorted(scores)
    assert evidence_of(relative(6.0, 3.0)) == pytest.approx(2.0)
