"""`tansaku bench --level` on the hand-judged transcript set (evals/sets/transcripts-v1.jsonl) over
its hand-written corpus (fixtures/transcripts/judged): both collections searched at once, a hit
counted by its session file. Proves the set runs and its paths resolve; not a quality gate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO

pytestmark = pytest.mark.both_backends

SET = REPO / "evals" / "sets" / "transcripts-v1.jsonl"
CORPUS = REPO / "fixtures" / "transcripts" / "judged"
Cli = Callable[..., Any]
SECRETS = ("Tr0ub4dor-fake-pw", "ghp_FAKEfake", "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "b3BlbnNzaC1rZXktdjEA")


@pytest.fixture
def judged(cli: Cli) -> Path:
    # The corpus is only read (the index lives in the test's own folder).
    for kind in ("claude", "codex"):
        result = cli("collection", "add", "--type", kind, CORPUS / kind, "--name", kind)
        assert result.exit_code == 0, result.stderr
    return CORPUS


@pytest.mark.parametrize("level", ["turn", "session"])
def test_bench_runs_the_judged_set_per_level(cli: Cli, judged: Path, level: str):
    data = cli("bench", SET, "--mode", "search", "--level", level, "--json").json()
    assert data["collection"] == "claude,codex"  # the set's corpus field names both collections
    assert [w["code"] for w in data["warnings"]] == []  # every judged session is indexed
    overall = next(s for s in data["summaries"] if s["kind"] == "all")
    assert overall["queries"] == 33 and overall["hit_at_10"] >= 0.8
    assert data["record"]["flags"]["level"] == level
    for outcome in data["queries"]:
        assert all(path.split("/", 1)[0] in ("claude", "codex") for path in outcome["ranked"])
        if level == "session":  # one result per session
            assert len(set(outcome["ranked"])) == len(outcome["ranked"])


def test_level_applies_to_search_and_vsearch_only(cli: Cli, judged: Path):
    data = cli("bench", SET, "--mode", "query-fused", "--level", "session", "--json").json()
    assert "LEVEL_IGNORED" in [w["code"] for w in data["warnings"]]


def test_no_secret_of_the_judged_corpus_is_findable(cli: Cli, judged: Path):
    for secret in SECRETS:
        result = cli("search", secret, "--json")
        assert result.exit_code == 0 and result.json()["results"] == [], secret
