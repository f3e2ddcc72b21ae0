"""Embeddings and vector search with a real GGUF model (MiniLM converted from its registry
package) run by llama-cpp-python, stored in real sqlite-vec tables."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlean

from .conftest import REPO, index_sql, interruptible
from .models_fixture import requires_llama, requires_minilm

pytestmark = [requires_llama, requires_minilm, pytest.mark.both_backends]


def embed(cli, *args: str) -> dict:
    result = cli("embed", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return result.json()


def vector_rows(index_path: Path) -> int:
    with index_sql(index_path) as conn:
        return conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]


@pytest.mark.usefixtures("indexed")
def test_embed_then_vsearch_finds_a_paraphrase(cli, model):
    report = embed(cli)
    assert report["dims"] == 384
    assert report["collections"][0]["embedded"] == 13
    data = cli("vsearch", "restore a single file from a snapshot", "--json").json()
    assert data["mode"] == "vsearch"
    top = data["results"][0]
    assert top["path"] == "guides/backups.md"
    # A paraphrase with no shared key word still ranks its document above unrelated ones.
    ranked = [
        h["path"]
        for h in cli(
            "vsearch", "get one file back from an old copy", "--all", "--min-score", "0", "--json"
        ).json()["results"]
    ]
    assert ranked.index("guides/backups.md") < ranked.index("guides/compression.md")
    assert ranked.index("guides/backups.md") < ranked.index("notes/2024-04-meeting.md")
    assert 0.3 <= top["score"] <= 1.0
    start, end = top["chunk_lines"]
    assert start <= top["snippet"]["start_line"] <= end
    scores = [hit["score"] for hit in data["results"]]
    assert scores == sorted(scores, reverse=True)
    assert embed(cli)["collections"][0]["pending"] == 0  # nothing left to do


@pytest.mark.usefixtures("indexed")
def test_vsearch_warns_when_the_embedder_cannot_read_the_query(cli, model):
    embed(cli)
    # MiniLM learnt English: its nearest chunks for a Chinese question are noise, and say so.
    chinese = cli("vsearch", "怎么设置压缩级别", "--json", "--min-score", "0").json()
    codes = [w["code"] for w in chinese["warnings"]]
    assert codes == ["QUERY_UNREADABLE"], chinese["warnings"]
    assert "use `search`" in chinese["warnings"][0]["message"]
    text = cli("vsearch", "怎么设置压缩级别", "--min-score", "0")
    assert text.exit_code == 0 and "QUERY_UNREADABLE" in text.stderr + text.stdout
    english = cli("vsearch", "restore a single file from a snapshot", "--json").json()
    assert english["warnings"] == []


@pytest.mark.usefixtures("indexed")
def test_vsearch_without_vectors_or_model_is_an_error_not_empty(cli, model, monkeypatch):
    result = cli("vsearch", "anything", "--json")
    assert result.exit_code == 3
    assert result.error()["code"] == "NO_VECTORS"
    assert "tansaku embed" in result.error()["hint"]
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", "/nonexistent/model.gguf")
    result = cli("vsearch", "anything", "--json")
    assert result.exit_code == 1
    assert result.error()["code"] == "MODEL_MISSING"
    assert "models add" in result.error()["hint"]


def test_chunk_level_reuse_only_re_embeds_the_edited_chunk(cli, model, tmp_path: Path):
    folder = tmp_path / "long"
    folder.mkdir()
    sections = [
        f"## Section {i}\n\n" + f"Paragraph {i} talks about topic {i}. " * 120 + "\n" for i in range(4)
    ]
    doc = folder / "long.md"
    doc.write_text("# Long\n\n" + "\n".join(sections), encoding="utf-8")
    assert cli("collection", "add", folder, "--name", "long").exit_code == 0
    chunks = len(cli("chunks", "long/long.md", "--json").json()["chunks"])
    assert chunks >= 3
    report = embed(cli)
    first = report["collections"][0]
    assert first["embedded"] >= chunks
    assert first["windows"] > 0  # 900-token chunks do not fit MiniLM's 254-token window
    # Rates: chunks/s counts chunks, vectors/s counts each window's vector.
    ratio = report["vectors_per_second"] / report["chunks_per_second"]
    assert ratio == pytest.approx(first["embedded"] / chunks, rel=1e-3)  # JSON rounds the rates
    edited = doc.read_text(encoding="utf-8").replace("Paragraph 3 talks", "Paragraph 3 speaks", 1)
    doc.write_text(edited, encoding="utf-8")
    assert cli("update").exit_code == 0
    second = embed(cli)["collections"][0]
    assert second["reused"] >= 1, second
    assert 0 < second["embedded"] < first["embedded"]


def test_vsearch_collection_filter_is_exact_for_a_small_collection(cli, model, tmp_path: Path):
    big = tmp_path / "big"
    big.mkdir()
    for i in range(80):  # more vectors than KNN fetches (50 for -n 5): tiny must not be crowded out
        (big / f"b{i}.md").write_text(
            f"# Backups {i}\n\nRestore files from backup snapshot {i}.\n", encoding="utf-8"
        )
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    (tiny / "cooking.md").write_text("# Soup\n\nSimmer the onions slowly.\n", encoding="utf-8")
    (tiny / "restore.md").write_text("# Getting data back\n\nHow to restore a lost file.\n", encoding="utf-8")
    for folder, name in ((big, "big"), (tiny, "tiny")):
        assert cli("collection", "add", folder, "--name", name).exit_code == 0
    embed(cli)
    unscoped_data = cli("vsearch", "restore a lost file", "-n", "5", "--json").json()
    unscoped = unscoped_data["results"]
    # On disk the 50 nearest of big's 80 vectors were scored: the total is a lower bound, and says so.
    assert unscoped_data["total_exact"] is False and unscoped_data["total"] >= 5
    footer = cli("vsearch", "restore a lost file", "-n", "5").stdout.strip().splitlines()[-1]
    assert footer.startswith("5 of at least ")
    everything = cli("vsearch", "restore a lost file", "--all", "--min-score", "0", "--json").json()
    assert everything["total_exact"] is True  # --all scores every vector
    assert len(everything["results"]) == everything["total"]
    scoped_data = cli("vsearch", "restore a lost file", "-c", "tiny", "-n", "5", "--json").json()
    scoped = scoped_data["results"]
    assert scoped_data["total_exact"] is True  # tiny has fewer vectors than KNN fetched
    assert [hit["path"] for hit in scoped][:1] == ["restore.md"]
    assert {hit["collection"] for hit in scoped} == {"tiny"}
    # The CLI searches on disk (sqlite-vec KNN within the collection); a kept API, in memory.
    from tansaku.api import Tansaku

    for keep in (False, True):
        api = Tansaku(keep_vectors=keep)
        everything = api.vsearch("restore a lost file", collections=["tiny"], limit=1, min_score=-1.0)
        assert [hit.path for hit in everything.hits] == ["restore.md"]
        assert everything.total == 2  # both tiny documents, never crowded out by big
        assert api._vector_cache().loads == int(keep)
    assert len(unscoped) == 5


@pytest.mark.usefixtures("indexed")
def test_vectors_from_another_model_are_reported(cli, model, tmp_path: Path, monkeypatch):
    embed(cli)
    other = tmp_path / "other.gguf"
    shutil.copyfile(model, other)
    with other.open("ab") as handle:
        handle.write(b"\0" * 64)  # same weights, another file: another fingerprint
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", str(other))
    result = cli("vsearch", "restore", "--json")
    assert result.exit_code == 3
    assert "another model" in result.error()["message"]
    assert cli("embed", "--json").exit_code == 0
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", str(model))
    data = cli("vsearch", "restore", "--json").json()
    assert data["results"]  # vectors of the first model were kept alongside


@pytest.mark.usefixtures("indexed")
def test_removing_documents_removes_their_vectors(cli, model, indexed: Path, index_path: Path):
    embed(cli)
    before = vector_rows(index_path)
    (indexed / "guides" / "backups.md").unlink()
    assert cli("update").exit_code == 0
    # Unlinked at once (never a result again), dropped by the next embed unless its text is reused.
    found = [h["path"] for h in cli("vsearch", "nightly backups", "--all", "--json").json()["results"]]
    assert "guides/backups.md" not in found
    embed(cli)
    assert vector_rows(index_path) == before - 1
    cli("collection", "remove", "sample")
    assert vector_rows(index_path) == 0


@pytest.mark.sqlite_only("the embed lock file (PostgreSQL's: test_postgres_vectors.py)")
@pytest.mark.usefixtures("indexed")
def test_a_second_embed_waits_then_says_who_holds_the_lock(cli, model, index_path: Path):
    from tansaku.index.locks import exclusive_lock

    with exclusive_lock(index_path, "embed"):
        result = cli("embed", "--json")
    assert result.exit_code == 3
    error = result.error()
    assert error["code"] == "INDEX_LOCKED"
    assert f"pid {os.getpid()}" in error["message"]
    assert embed(cli)["collections"][0]["embedded"] == 13


# Notes embedded in one run: enough batches of 32 (five) that a Ctrl-C sent once 32 vectors are
# stored lands inside the batches, not after the last one (70 was 3 batches; a poll slowed by
# load could first see 64 and interrupt the final prune, which has no report).
NOTES = 130


@pytest.mark.sqlite_only("a subprocess on the SQLite file (PostgreSQL: test_postgres_vectors.py)")
@pytest.mark.subprocess
def test_interrupted_embed_keeps_finished_batches_and_resumes(model, tmp_path: Path):
    corpus = tmp_path / "many"
    corpus.mkdir()
    for i in range(NOTES):
        (corpus / f"n{i:03}.md").write_text(
            f"# Note {i}\n\n" + f"word{i} sentence about item {i}. " * 60, encoding="utf-8"
        )
    # One window per note (each has about 420 tokens), so vectors count chunks here.
    env = {**os.environ, "TANSAKU_PYTHON": sys.executable, "TANSAKU_EMBED_WINDOW": "510"}
    wrapper = str(REPO / "bin" / "tansaku")
    subprocess.run(
        [wrapper, "collection", "add", str(corpus), "--name", "many"],
        env=env,
        check=True,
        capture_output=True,
    )
    process = subprocess.Popen(
        [wrapper, "embed", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=interruptible,
    )
    index_path = Path(os.environ["TANSAKU_INDEX_PATH"])
    deadline = time.monotonic() + 120
    done = 0
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
        try:
            done = vector_rows(index_path)
        except sqlean.OperationalError:
            continue
        if done >= 32:
            break
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    kept = vector_rows(index_path)
    assert 32 <= kept < NOTES
    resumed = subprocess.run(
        [wrapper, "embed", "--json"], env=env, capture_output=True, text=True, check=True
    )
    again = json.loads(resumed.stdout)["collections"][0]
    assert again["pending"] == NOTES - kept
    assert vector_rows(index_path) == NOTES


def test_status_reports_vectors_pending_and_window(cli, model, indexed: Path):
    before = cli("status", "--json").json()
    assert before["collections"][0]["vectors"] == 0
    assert before["embed_model"] == str(model) and before["embed_window"] is None
    embed(cli)
    (indexed / "notes" / "new.md").write_text("# New\n\nA fresh note about restores.\n", encoding="utf-8")
    assert cli("update").exit_code == 0
    status = cli("status", "--json").json()
    info = status["collections"][0]
    assert info["vectors"] == 13 and info["unembedded"] == 1
    # MiniLM was trained on 256 tokens: 254 besides [CLS] and [SEP], though its context is 510.
    assert status["embed_window"] == 254
    assert any("have no vector yet" in line for line in status["pending"])
    text = cli("status").stdout
    assert "254-token windows" in text


@pytest.mark.usefixtures("indexed")
def test_models_import_converts_a_folder_and_embed_uses_it(cli, tmp_path: Path, monkeypatch):
    from tansaku.models.convert import find_minilm_package

    monkeypatch.delenv("TANSAKU_EMBED_MODEL", raising=False)
    monkeypatch.setenv("TANSAKU_MODEL_DIR", str(tmp_path / "models"))
    result = cli("models", "import", find_minilm_package(), "--name", "minilm", "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["dims"] == 384 and data["source"] == "user"
    assert embed(cli)["collections"][0]["embedded"] == 13
    assert cli("vsearch", "restore a file", "--json").json()["results"]
    refused = cli("models", "import", tmp_path, "--json")
    assert refused.exit_code == 2
    assert "BERT" in refused.error()["hint"]


@pytest.mark.usefixtures("indexed")
def test_bench_measures_vsearch_and_records_the_model(cli, model):
    embed(cli)
    data = cli("bench", REPO / "fixtures" / "evals" / "sample-v1.jsonl", "--json").json()
    assert data["modes"] == ["search", "vsearch", "query-fused", "query-expanded", "query"]
    overall = next(s for s in data["summaries"] if s["mode"] == "vsearch" and s["kind"] == "all")
    assert overall["queries"] == 8 and overall["hit_at_10"] > 0
    fused = next(s for s in data["summaries"] if s["mode"] == "query" and s["kind"] == "all")
    assert fused["queries"] == 8 and fused["hit_at_10"] > 0
    assert data["record"]["models"]["embed"]["path"] == str(model)
    assert len(data["record"]["models"]["embed"]["sha256"]) == 64
    # The expansion and rerank models of the query modes are recorded too, here as absent.
    assert data["record"]["models"]["generate"]["present"] is False
    assert data["record"]["models"]["rerank"]["present"] is False
    keyword_only = cli("bench", REPO / "fixtures" / "evals" / "sample-v1.jsonl", "--mode", "search", "--json")
    assert keyword_only.json()["record"]["models"] == {}
    fused_only = cli(
        "bench", REPO / "fixtures" / "evals" / "sample-v1.jsonl", "--mode", "query-fused", "--json"
    )
    assert set(fused_only.json()["record"]["models"]) == {"embed"}


class _FailsOnMarker:
    """The real MiniLM embedder, refusing any text that contains a marker: a chunk the model
    cannot embed (here on purpose) must be reported and skipped, not end the run."""

    def __init__(self, inner, marker: str) -> None:
        self.inner, self.marker = inner, marker
        self.dims, self.context_tokens = inner.dims, inner.context_tokens

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts):
        if any(self.marker in text for text in texts):
            raise RuntimeError("cannot embed this text")
        return self.inner.embed(texts)


@pytest.mark.sqlite_only("calls embed_collections with the SQLite file")
@pytest.mark.usefixtures("indexed")
def test_a_failing_chunk_is_reported_and_skipped(cli, model, index_path: Path):
    from tansaku.api import Tansaku
    from tansaku.index.embed import embed_collections
    from tansaku.models.embedding import load_embedder
    from tansaku.models.prompts import PromptFormat

    api = Tansaku()
    collection = api.config().collections["sample"]
    real = load_embedder(model)
    report = embed_collections(
        index_path, [collection], str(model), PromptFormat("plain"), lambda: _FailsOnMarker(real, "Nightly")
    )
    result = report.collections[0]
    assert result.embedded == 12
    assert len(result.failed) == 1 and "guides/backups.md#0" in result.failed[0]
    assert "cannot embed" in result.failed[0]
    # The failure is remembered: the next run does not retry it forever, the others are done.
    assert (
        embed_collections(index_path, [collection], str(model), PromptFormat("plain"), lambda: real)
        .collections[0]
        .pending
        == 0
    )


@pytest.mark.usefixtures("indexed")
def test_a_new_chunker_version_reuses_every_unchanged_vector(cli, model, monkeypatch):
    first = embed(cli)["collections"][0]
    assert first["embedded"] > 0
    import tansaku.chunking.model as chunk_model

    # The next chunker cuts the same texts the same way: every chunk is re-made, no vector is.
    monkeypatch.setattr(chunk_model, "CHUNKER_VERSION", chunk_model.CHUNKER_VERSION + 1)
    assert cli("update").exit_code == 0
    second = embed(cli)["collections"][0]
    assert second["embedded"] == 0, second
    assert second["reused"] == first["embedded"], second
    assert cli("vsearch", "restore a file", "--json").exit_code == 0


@pytest.mark.usefixtures("indexed")
def test_a_new_embedded_text_version_makes_vectors_stale_then_replaces_them(
    cli, model, monkeypatch, index_path
):
    first = embed(cli)["collections"][0]
    import tansaku.index.embed as embed_module

    monkeypatch.setattr(embed_module, "EMBEDDED_TEXT_VERSION", embed_module.EMBEDDED_TEXT_VERSION + 1)
    status = cli("status", "--json").json()["collections"][0]
    assert status["vectors"] == 0 and status["stale_vectors"] == first["embedded"], status
    assert embed(cli)["collections"][0]["embedded"] == first["embedded"]
    status = cli("status", "--json").json()["collections"][0]
    assert status["vectors"] == first["embedded"] and status["stale_vectors"] == 0, status
    # The older version's vectors are gone from the index, not only from the counts.
    with index_sql(index_path) as conn:
        fingerprints = {
            row[0] for row in conn.execute("SELECT DISTINCT fingerprint FROM embeddings").fetchall()
        }
    assert len(fingerprints) == 1, fingerprints
    search = cli("vsearch", "restore a file", "--json").json()
    assert search["results"] and "STALE_VECTORS" not in [w["code"] for w in search["warnings"]]


@pytest.mark.usefixtures("indexed")
def test_the_window_can_be_set_and_a_bad_setting_is_an_error(cli, model, monkeypatch):
    monkeypatch.setenv("TANSAKU_EMBED_WINDOW", "100")
    assert cli("embed").exit_code == 0
    assert cli("status", "--json").json()["embed_window"] == 100
    monkeypatch.setenv("TANSAKU_EMBED_WINDOW", "lots")
    result = cli("embed", "-f", "--json")
    assert result.exit_code == 2 and "TANSAKU_EMBED_WINDOW" in result.error()["message"]


def test_plain_prompts_start_every_window_with_the_document_title():
    from tansaku.models.prompts import PromptFormat

    plain = PromptFormat("plain")
    assert plain.document("Nightly backups", (), "restic restore") == "Nightly backups\nrestic restore"
    heading = ("Nightly backups", "Restoring a file")
    assert plain.document("Nightly backups", heading, "x") == "Nightly backups > Restoring a file\nx"
    assert plain.document("", (), "x") == "x"
