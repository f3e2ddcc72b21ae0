"""`tansaku models pull` end to end against a loopback stand-in for the hub (test/hf_server.py).

Pulls run the real entry point in a subprocess: huggingface_hub reads HF_ENDPOINT and HF_HOME
once, when it is imported, so each pull needs a fresh process to see this test's server. That
also lets a test kill a pull mid-file (SIGKILL, or SIGINT as Ctrl-C sends) and check that the
next pull resumes it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

from tansaku.models.system import gpu_offload

from .conftest import CliResult, interruptible
from .hf_server import HubServer, sha256, tiny_gguf

REPO_ID, FILENAME = "test-org/tiny-GGUF", "tiny.gguf"
HF_REF = f"hf:{REPO_ID}/{FILENAME}"
# Above huggingface_hub's 10 MiB read chunk: a resumed download keeps only whole chunks.
BIG_ELEMENTS = 3_000_000
# A killed pull gets this much at full speed, then a trickle: the kill lands after the first
# 10 MiB chunk reached the disk and long before the last byte.
STALL_AT = 11_000_000


@pytest.fixture
def needs_hub_client() -> None:
    if find_spec("huggingface_hub") is None:
        reason = "huggingface_hub is not installed (pip install -e '.[models]')"
        if os.environ.get("TANSAKU_REQUIRE_MODELS") == "1":
            pytest.fail(f"TANSAKU_REQUIRE_MODELS=1 but {reason}")
        pytest.skip(reason)


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    return tmp_path / "models"


@pytest.fixture
def hub(tmp_path: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with HubServer() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        monkeypatch.setenv("TANSAKU_MODEL_DIR", str(model_dir))
        for name in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_HUB_CACHE", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            monkeypatch.delenv(name, raising=False)
            monkeypatch.delenv(name.lower(), raising=False)
        for role in ("EMBED", "GENERATE", "RERANK"):
            monkeypatch.delenv(f"TANSAKU_{role}_MODEL", raising=False)
        yield server


@pytest.fixture
def run() -> Callable[..., CliResult]:
    def run(*args: object) -> CliResult:
        proc = subprocess.run(
            [sys.executable, "-m", "tansaku", *map(str, args)],
            capture_output=True,
            text=True,
            env=dict(os.environ),
            timeout=120,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


def cached(model_dir: Path) -> Path:
    return model_dir / "test-org" / "tiny-GGUF" / FILENAME


def model_files(model_dir: Path) -> list[Path]:
    """Model data on disk, whole or partial, and the records of partial downloads (lock files aside)."""
    patterns = ("*.gguf", "*.incomplete", "*.part", "*.part.json")
    found = [p for pattern in patterns for p in model_dir.rglob(pattern)] if model_dir.exists() else []
    return [p for p in found if p.is_file()]


def partial(model_dir: Path) -> Path:
    return model_dir / ".downloads" / "test-org" / "tiny-GGUF" / f"{FILENAME}.part"


def wait_until(condition: Callable[[], object], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def pull_and_kill(
    hub: HubServer, model_dir: Path, sig: signal.Signals, meanwhile: Callable[[], object] = lambda: None
) -> tuple[int, int, str]:
    """Start `models pull embed`, send ``sig`` once bytes are on disk; (bytes kept, exit code, stderr).

    ``meanwhile`` runs while the pull is mid-file, just before the signal.
    """
    hub.stall_next_download(after_bytes=STALL_AT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tansaku", "models", "pull", "embed"],
        preexec_fn=interruptible,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    part = partial(model_dir)
    try:
        wait_until(lambda: part.is_file() and part.stat().st_size > 0, "the first bytes on disk")
        meanwhile()
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    wait_until(hub.downloads, "the server to see the client go")  # logged when its write fails
    return part.stat().st_size, proc.returncode, stderr


@pytest.mark.usefixtures("needs_hub_client")
def test_pull_puts_the_file_in_the_cache_and_list_and_path_see_it(
    hub: HubServer, run, model_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    data = tiny_gguf(embedding_length=384)
    hub.add(REPO_ID, FILENAME, data)
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)

    result = run("models", "pull", "embed", "--json")
    assert result.exit_code == 0, result.stderr
    pulled = result.json()["pulled"]
    assert [(p["role"], p["local_path"], p["size"], p["dims"]) for p in pulled] == [
        ("embed", str(cached(model_dir)), len(data), 384)
    ]
    assert cached(model_dir).read_bytes() == data
    assert model_files(model_dir) == [cached(model_dir)]  # nothing half-written left in staging
    assert [(r.method, r.path) for r in hub.requests] == [
        ("HEAD", f"/{REPO_ID}/resolve/main/{FILENAME}"),
        ("GET", f"/{REPO_ID}/resolve/main/{FILENAME}"),
    ]

    path = run("models", "path", "embed")
    assert (path.exit_code, path.stdout) == (0, f"{cached(model_dir)}\n")
    listed = {m["role"]: m for m in run("models", "list", "--json").json()["models"]}
    assert (listed["embed"]["present"], listed["embed"]["size"]) == (True, len(data))

    hub.requests.clear()
    again = run("models", "pull", "embed")
    assert again.exit_code == 0, again.stderr
    assert "already present" in again.stdout
    assert hub.requests == []  # a present model is never fetched again


@pytest.mark.usefixtures("needs_hub_client")
def test_pull_without_roles_fetches_every_missing_hf_model(
    hub: HubServer, run, model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    local = tmp_path / "local.gguf"
    local.write_bytes(tiny_gguf(embedding_length=64))
    hub.add(REPO_ID, FILENAME, tiny_gguf(embedding_length=384))
    hub.add("other-org/rerank-GGUF", "sub/rerank.gguf", tiny_gguf(embedding_length=128))
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", "hf:other-org/rerank-GGUF/sub/rerank.gguf")
    monkeypatch.setenv("TANSAKU_GENERATE_MODEL", str(local))

    result = run("models", "pull", "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    if gpu_offload():
        assert sorted(p["role"] for p in data["pulled"]) == ["embed", "rerank"]
        assert data["skipped"] == ["generate"]
    else:  # on a CPU `query` neither expands nor reranks by default: only the embed model is pulled
        assert [p["role"] for p in data["pulled"]] == ["embed"]
        assert [left["role"] for left in data["left_out"]] == ["generate", "rerank"]
        assert not (model_dir / "other-org" / "rerank-GGUF" / "sub" / "rerank.gguf").exists()
        text = run("models", "pull")
        assert "rerank: not pulled" in text.stdout and "`tansaku models pull rerank`" in text.stdout
        asked = run("models", "pull", "rerank", "--json").json()
        assert [p["role"] for p in asked["pulled"]] == ["rerank"] and asked["left_out"] == []
    assert (model_dir / "other-org" / "rerank-GGUF" / "sub" / "rerank.gguf").is_file()
    assert all(m["present"] for m in run("models", "list", "--json").json()["models"])

    hub.requests.clear()
    nothing = run("models", "pull")
    assert nothing.exit_code == 0
    assert "nothing to download" in nothing.stdout
    assert hub.requests == []


@pytest.mark.usefixtures("needs_hub_client")
def test_an_interrupted_download_resumes_with_a_range_request(
    hub: HubServer, run, model_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    data = tiny_gguf(elements=BIG_ELEMENTS)
    hub.add(REPO_ID, FILENAME, data)
    hub.cut_next_download(after_bytes=11_000_000)
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)

    result = run("models", "pull", "embed")
    assert result.exit_code == 0, result.stderr
    assert cached(model_dir).read_bytes() == data
    first, second = hub.downloads()
    assert (first.range, first.bytes_sent) == (None, 11_000_000)
    assert second.range is not None and second.range.startswith("bytes=")
    resumed_from = int(second.range.removeprefix("bytes=").rstrip("-"))
    assert resumed_from > 0
    assert second.bytes_sent == len(data) - resumed_from < len(data)


@pytest.mark.usefixtures("needs_hub_client")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "Ctrl-C"])
def test_a_killed_pull_resumes_where_it_stopped(
    hub: HubServer, run, model_dir: Path, monkeypatch: pytest.MonkeyPatch, sig: signal.Signals
):
    data = tiny_gguf(elements=BIG_ELEMENTS)
    hub.add(REPO_ID, FILENAME, data, lfs=True)  # served as the hub serves it: 302 to a CDN host
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)
    monkeypatch.setenv("HF_TOKEN", "hf_loopback_test_token")

    kept, exit_code, stderr = pull_and_kill(hub, model_dir, sig)
    if sig == signal.SIGKILL:
        assert exit_code == -signal.SIGKILL
    else:
        assert exit_code == 130
        assert "`tansaku models pull` resumes it" in stderr and "Traceback" not in stderr
    assert 0 < kept < len(data)
    assert not cached(model_dir).exists()

    result = run("models", "pull", "embed", "--json")
    assert result.exit_code == 0, result.stderr
    assert sha256(cached(model_dir).read_bytes()) == sha256(data)
    first, second = hub.downloads()
    assert first.range is None and first.bytes_sent < len(data)
    assert second.range == f"bytes={kept}-"  # only the rest was asked for
    assert second.bytes_sent == len(data) - kept
    # The metadata came from the hub with the token; the bytes from the "CDN", without it.
    heads = [r for r in hub.requests if r.method == "HEAD"]
    assert heads and all(r.authorized and r.host == f"127.0.0.1:{hub.port}" for r in heads)
    assert all(not r.authorized and r.host == f"localhost:{hub.port}" for r in (first, second))
    assert model_files(model_dir) == [cached(model_dir)]  # the partial file and its record are gone
    assert list(model_dir.rglob("*.lock")) == []


@pytest.mark.usefixtures("needs_hub_client")
def test_a_partial_file_of_an_older_revision_is_discarded_not_resumed(
    hub: HubServer, run, model_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    hub.add(REPO_ID, FILENAME, tiny_gguf(embedding_length=384, elements=BIG_ELEMENTS), lfs=True)
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)
    kept, _, _ = pull_and_kill(hub, model_dir, signal.SIGKILL)
    assert kept > 0

    new = tiny_gguf(embedding_length=768, elements=BIG_ELEMENTS)  # same size, other bytes, new ETag
    hub.add(REPO_ID, FILENAME, new, lfs=True)
    hub.requests.clear()
    result = run("models", "pull", "embed", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json()["pulled"][0]["dims"] == 768
    assert cached(model_dir).read_bytes() == new
    assert [(r.range, r.bytes_sent) for r in hub.downloads()] == [(None, len(new))]  # from zero


@pytest.mark.usefixtures("needs_hub_client")
def test_a_second_pull_of_a_file_being_downloaded_fails_at_once(
    hub: HubServer, run, model_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    hub.add(REPO_ID, FILENAME, tiny_gguf(elements=BIG_ELEMENTS), lfs=True)
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)
    second: list[CliResult] = []
    kept, _, _ = pull_and_kill(
        hub,
        model_dir,
        signal.SIGKILL,
        meanwhile=lambda: second.append(run("models", "pull", "embed", "--json")),
    )
    assert second[0].exit_code == 3
    error = json.loads(second[0].stderr)["error"]
    assert "another `tansaku models pull` is downloading this file" in error["message"]
    assert ".part.lock" in error["hint"]
    assert partial(model_dir).stat().st_size == kept  # the second pull wrote nothing
    assert len(hub.downloads()) == 1


@pytest.mark.usefixtures("needs_hub_client")
@pytest.mark.parametrize(
    ("etag", "complaint"),
    [(None, "SHA-256"), ("not-a-sha256-etag", "not GGUF")],
    ids=["hub-reports-sha256", "magic-only"],
)
def test_a_corrupted_partial_file_is_rejected_after_resuming(
    hub: HubServer,
    run,
    model_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    etag: str | None,
    complaint: str,
):
    data = tiny_gguf(elements=BIG_ELEMENTS)
    hub.add(REPO_ID, FILENAME, data, etag=etag, lfs=etag is None)
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)
    kept, _, _ = pull_and_kill(hub, model_dir, signal.SIGKILL)
    with partial(model_dir).open("r+b") as handle:  # the disk garbles the bytes already received
        handle.write(b"JUNK")

    result = run("models", "pull", "embed", "--json")
    assert result.exit_code == 3
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "MODEL_DOWNLOAD_FAILED"
    assert complaint in error["message"] and "deleted" in error["message"]
    assert hub.downloads()[-1].range == f"bytes={kept}-"
    assert model_files(model_dir) == []  # nothing under the model's name, no partial file either
    assert run("models", "path", "embed").exit_code == 1

    again = run("models", "pull", "embed")  # the next pull starts afresh and succeeds
    assert again.exit_code == 0, again.stderr
    assert cached(model_dir).read_bytes() == data
    assert hub.downloads()[-1].range is None


@pytest.mark.usefixtures("needs_hub_client")
def test_a_download_whose_sha256_differs_from_the_hubs_is_rejected(
    hub: HubServer, run, model_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    hub.add(REPO_ID, FILENAME, tiny_gguf(), etag=sha256(b"another file"), lfs=True)
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)

    result = run("models", "pull", "embed", "--json")
    assert result.exit_code == 3
    message = json.loads(result.stderr)["error"]["message"]
    assert f"where the hub reports {sha256(b'another file')}" in message
    assert model_files(model_dir) == []


@pytest.mark.usefixtures("needs_hub_client")
def test_a_file_that_is_not_gguf_is_rejected_and_removed(
    hub: HubServer, run, model_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    hub.add(REPO_ID, FILENAME, b"<!doctype html><title>Sign in to continue</title>" * 20)
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)

    result = run("models", "pull", "embed", "--json")
    assert result.exit_code == 3
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "MODEL_DOWNLOAD_FAILED"
    assert "not GGUF" in error["message"]
    assert model_files(model_dir) == []
    assert run("models", "path", "embed").exit_code == 1


@pytest.mark.usefixtures("needs_hub_client")
def test_a_file_the_hub_does_not_have_fails_cleanly(hub: HubServer, run, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", "hf:test-org/tiny-GGUF/absent.gguf")
    started = time.monotonic()
    result = run("models", "pull", "embed", "--json")
    assert time.monotonic() - started < 10
    assert result.exit_code == 3
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "MODEL_DOWNLOAD_FAILED"
    assert "404" in error["message"]
    assert "Traceback" not in result.stderr


@pytest.mark.usefixtures("needs_hub_client")
@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:1", "http://no-such-hub.invalid"])
def test_offline_fails_fast_and_names_the_manual_route(
    hub: HubServer, run, endpoint: str, model_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HF_ENDPOINT", endpoint)  # nothing listens there / the name does not resolve
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)
    started = time.monotonic()
    result = run("models", "pull", "embed", "--json")
    elapsed = time.monotonic() - started
    assert elapsed < 5, f"took {elapsed:.1f} s"
    assert result.exit_code == 3
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "OFFLINE"
    assert "cannot reach the model hub" in error["message"]
    assert "tansaku models add" in error["hint"]
    assert f"{endpoint}/{REPO_ID}/resolve/main/{FILENAME}" in error["hint"]
    assert model_files(model_dir) == []

    text = run("models", "pull", "embed")
    assert text.exit_code == 3
    assert "models add" in text.stderr and "Traceback" not in text.stderr


@pytest.mark.usefixtures("needs_hub_client")
def test_hf_hub_offline_is_respected_without_trying(hub: HubServer, run, monkeypatch: pytest.MonkeyPatch):
    hub.add(REPO_ID, FILENAME, tiny_gguf())
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)
    result = run("models", "pull", "embed", "--json")
    assert (result.exit_code, json.loads(result.stderr)["error"]["code"]) == (3, "OFFLINE")
    assert hub.requests == []


def test_pull_of_a_local_file_role_needs_no_network(
    hub: HubServer, cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    local = tmp_path / "local.gguf"
    monkeypatch.setenv("TANSAKU_GENERATE_MODEL", str(local))
    missing = cli("models", "pull", "generate", "--json")
    assert (missing.exit_code, missing.error()["code"]) == (1, "MODEL_MISSING")
    assert "models add generate" in missing.error()["hint"]

    local.write_bytes(tiny_gguf())
    present = cli("models", "pull", "generate")
    assert present.exit_code == 0, present.stderr
    assert "nothing to download" in present.stdout
    assert cli("models", "pull", "summarize").exit_code == 2
    assert hub.requests == []


def test_no_other_command_touches_the_network(
    hub: HubServer, cli, sample: Path, monkeypatch: pytest.MonkeyPatch
):
    # Every role points at the (counting) hub and no model is present: nothing may fetch one.
    hub.add(REPO_ID, FILENAME, tiny_gguf())
    for role in ("EMBED", "GENERATE", "RERANK"):
        monkeypatch.setenv(f"TANSAKU_{role}_MODEL", HF_REF)
    assert cli("collection", "add", sample, "--name", "sample").exit_code == 0
    assert cli("update").exit_code == 0
    assert cli("search", "restore").exit_code == 0
    assert cli("status", "--json").exit_code == 0
    assert cli("get", "sample/guides/backups.md").exit_code == 0
    assert cli("models", "list").exit_code == 0
    assert cli("models", "path", "embed").exit_code == 1
    assert hub.requests == []

    code = (
        "import sys\n"
        "from tansaku.cli.main import main\n"
        "for argv in (['search', 'restore'], ['status'], ['models', 'list'], ['models', 'path', 'embed']):\n"
        "    main(argv)\n"
        "print('huggingface_hub' in sys.modules, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert proc.stderr.strip().splitlines()[-1] == "False"
    assert hub.requests == []


@pytest.mark.usefixtures("needs_hub_client")
def test_a_huggingface_hub_without_the_api_used_is_a_clear_error(monkeypatch: pytest.MonkeyPatch):
    import huggingface_hub.file_download

    from tansaku.errors import ModelDownloadFailed
    from tansaku.models import download

    def http_get(url: str, temp_file: object) -> None:  # an older or newer shape of the function
        raise AssertionError("never called")

    monkeypatch.setattr(huggingface_hub.file_download, "http_get", http_get)
    with pytest.raises(ModelDownloadFailed) as failure:
        download._client()
    assert "lacks the download API tansaku uses" in failure.value.message
    assert (
        "http_get() takes no resume_size, expected_size, headers, displayed_filename" in failure.value.message
    )
    assert "huggingface_hub==" in (failure.value.hint or "")
