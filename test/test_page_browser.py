"""The search page at `/`: its headers, its assets, and (in a real Chromium) typing and IME safety."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .serve_support import Server, http_server

pytestmark = pytest.mark.subprocess
CHROMIUM = "/usr/bin/chromium"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


@pytest.fixture
def server(indexed: Path, tmp_path: Path) -> Iterator[Server]:
    with http_server(tmp_path) as running:
        yield running


def test_the_page_has_a_strict_csp_and_no_third_party_url(server: Server):
    reply = server.get("/")
    assert reply.status == 200 and "<input" in reply.body.decode()
    assert "script-src 'self'" in reply.headers["content-security-policy"]
    assert reply.headers["x-content-type-options"] == "nosniff"
    assert "search page: " + server.url + "/" in server.output()
    for asset in ("/", "/page/app.js", "/page/app.css"):
        text = server.get(asset).body.decode()
        assert not re.search(r"https?://", text), asset


@pytest.fixture
def browser():
    sync_api = (
        pytest.importorskip("playwright.sync_api") if not os.environ.get("TANSAKU_REQUIRE_BROWSER") else None
    )
    if sync_api is None:
        import playwright.sync_api as sync_api
    if not shutil.which("chromium") and not os.environ.get("TANSAKU_REQUIRE_BROWSER"):
        pytest.skip("chromium is not installed (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


def test_typing_shows_results_and_composition_sends_nothing(server: Server, browser):
    page = browser.new_page(viewport={"width": 400, "height": 800})
    searches: list[str] = []
    page.on("request", lambda r: searches.append(r.url) if r.url.endswith("/search") else None)
    page.goto(server.url + "/")
    page.keyboard.press("/")
    page.keyboard.type("restore")
    # A keyword search starts on the first key after a pause, so a prefix's results ("r", "restor")
    # may show before the whole word's: wait for the last query's highlight, then check it.
    page.wait_for_function(
        "() => { const m = document.querySelector('#results mark');"
        " return m && m.textContent.toLowerCase() === 'restore'; }",
        timeout=10_000,
    )
    assert "Nightly backups" in page.inner_text("#results")
    assert page.inner_text("#results mark").lower() == "restore"
    before = len(searches)
    page.evaluate("""() => { const q = document.getElementById('q');
        q.dispatchEvent(new CompositionEvent('compositionstart'));
        q.value = 'backu'; q.dispatchEvent(new InputEvent('input', {isComposing: true})); }""")
    page.wait_for_timeout(500)
    assert len(searches) == before
    page.evaluate("() => document.getElementById('q').dispatchEvent(new CompositionEvent('compositionend'))")
    page.wait_for_timeout(500)
    assert len(searches) == before + 1
    page.close()


def test_open_a_passage_and_page_through_it(server: Server, browser):
    page = browser.new_page()
    page.goto(server.url + "/")
    page.fill("#q", "restore")
    page.wait_for_selector("#results li")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_selector("#passage-lines:has-text('6:')")
    assert "tansaku://sample/guides/backups.md" in page.inner_text("#passage-path")
    # Opened in place, under its result; after new searches (one of nothing) it opens again.
    assert page.locator("#results li.selected #passage").count() == 1
    page.fill("#q", "")
    page.wait_for_function("() => !document.querySelector('#results li')")
    page.fill("#q", "compression")
    page.wait_for_selector("#results li")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_selector("#passage-path:has-text('compression')")
    assert page.is_visible("#passage-lines")


def test_a_missing_model_shows_its_command(server: Server, browser):
    page = browser.new_page()
    page.goto(server.url + "/")
    page.select_option("#mode", "vsearch")
    page.fill("#q", "restore")
    page.wait_for_selector("#status .error")
    assert "tansaku" in page.inner_text("#status")


def test_a_foreign_page_cannot_use_the_api(server: Server, browser):
    page = browser.new_page()
    # A page of another site (served by Playwright, never fetched from the network) calls the API.
    page.route(
        "http://foreign.example/", lambda route: route.fulfill(body="<p>x</p>", content_type="text/html")
    )
    page.goto("http://foreign.example/")
    outcome = page.evaluate(
        """async (url) => { try {
             const r = await fetch(url + '/search', {method: 'POST',
                 headers: {'Content-Type': 'application/json'}, body: JSON.stringify({query: 'restore'})});
             return 'status ' + r.status; } catch (e) { return 'blocked'; } }""",
        server.url,
    )
    assert outcome == "blocked"
    assert (
        "ORIGIN_REFUSED"
        in server.post("/search", {"query": "x"}, headers={"Origin": "http://foreign.example"}).body.decode()
    )


@pytest.fixture
def agents_server(cli: Any, sample: Path, tmp_path: Path) -> Iterator[Server]:
    """A server over the sample files and the Claude and Codex fixture transcripts."""
    for kind in ("claude", "codex"):
        shutil.copytree(FIXTURES / kind, tmp_path / kind)
        assert cli("collection", "add", "--type", kind, tmp_path / kind).exit_code == 0
    assert cli("collection", "add", sample, "--name", "sample").exit_code == 0
    with http_server(tmp_path) as running:
        yield running


def _bodies(page: Any, path: str) -> list[dict[str, Any]]:
    """The JSON bodies the page POSTs to ``path``, as they are sent."""
    sent: list[dict[str, Any]] = []
    page.on("request", lambda r: sent.append(json.loads(r.post_data)) if r.url.endswith(path) else None)
    return sent


def _search(page: Any, server: Server, query: str) -> None:
    page.goto(server.url + "/")
    page.wait_for_selector("#chips button")
    page.fill("#q", query)
    page.wait_for_selector("#results li")


def test_collection_chips_filter_the_results(agents_server: Server, browser):
    page = browser.new_page()
    sent = _bodies(page, "/search")
    _search(page, agents_server, "folder")
    assert {"sample", "claude"} <= {p.split("/")[2] for p in page.locator("#results .path").all_inner_texts()}
    chip = page.locator("#chips button[data-collection=sample]")
    assert chip.inner_text() == "sample 13"
    with page.expect_response(lambda r: r.url.endswith("/search")):
        chip.click()
    page.wait_for_timeout(100)
    assert sent[-1]["collections"] == ["sample"]
    paths = page.locator("#results .path").all_inner_texts()
    assert paths and all(p.startswith("tansaku://sample/") for p in paths)


def test_level_role_and_date_filters_for_transcripts(agents_server: Server, browser):
    page = browser.new_page()
    sent = _bodies(page, "/search")
    _search(page, agents_server, "index")
    assert page.is_visible("#transcript-filters")
    with page.expect_response(lambda r: r.url.endswith("/search")):
        page.click("#roles button[data-role=user]")
    page.wait_for_timeout(100)
    assert sent[-1]["roles"] == ["user"]
    metas = [m for m in page.locator("#results .meta").all_inner_texts() if m.startswith("turn")]
    assert metas and all(m.startswith("turn · user") for m in metas)
    with page.expect_response(lambda r: r.url.endswith("/search")):
        page.select_option("#level", "session")
    page.wait_for_timeout(100)
    assert sent[-1]["level"] == "session"
    assert page.locator("#results .meta", has_text="session ·").count() >= 1
    with page.expect_response(lambda r: r.url.endswith("/search")):
        page.fill("#since", "2025-12-01")
    page.wait_for_timeout(100)
    assert sent[-1]["since"] == "2025-12-01"
    stamps = re.findall(r"\d{4}-\d\d-\d\d", page.inner_text("#results"))
    assert stamps and all(s >= "2025-12-01" for s in stamps)


def test_a_files_only_index_shows_no_transcript_filters(server: Server, browser):
    page = browser.new_page()
    sent = _bodies(page, "/search")
    _search(page, server, "restore")
    assert not page.is_visible("#transcript-filters")
    assert "level" not in sent[-1] and "roles" not in sent[-1]


def test_opening_a_transcript_hit_shows_the_turns_around_it(agents_server: Server, browser):
    page = browser.new_page()
    page.goto(agents_server.url + "/")
    page.wait_for_selector("#chips button")
    page.click("#chips button[data-collection=claude]")
    page.fill("#q", "rename folder")
    page.wait_for_selector("#results li")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_selector("#turns li.focus")
    focus = page.inner_text("#turns li.focus")
    assert focus.startswith("5: user") and "rename a folder" in focus
    assert page.is_hidden("#passage-lines")
    shown = page.locator("#turns li.turn").count()
    assert shown >= 2
    page.click("#more")  # more turns around the hit
    # Functions, not expressions: the page's CSP forbids the eval that an expression string needs.
    page.wait_for_function("(n) => document.querySelectorAll('#turns li.turn').length > n", arg=shown)
    with page.expect_response(lambda r: "/session?" in r.url):
        page.click("#whole")  # the session from its start, as `session read` pages it
    page.wait_for_function("() => !document.querySelector('#turns li.focus')")
    lines = [int(t.split(":")[0]) for t in page.locator("#turns li.turn").all_inner_texts()]
    assert lines[0] == 5 and len(lines) == 10 and lines == sorted(lines)  # its 10 turns, from the first
    assert page.is_hidden("#more")  # all of them fit one page


def test_the_status_bar_shows_documents_and_the_command_for_a_missing_model(server: Server, browser):
    page = browser.new_page()
    page.goto(server.url + "/")
    page.wait_for_selector("#statusbar .model")
    bar = page.inner_text("#statusbar")
    assert "13 documents in 1 collections" in bar
    embed = page.locator("#statusbar [data-role=embed]")
    assert "embed model missing" in embed.inner_text()
    assert embed.locator("code").inner_text() == "tansaku models pull embed"


def test_the_status_bar_with_a_model_but_no_vectors_says_embed(
    indexed: Path, tmp_path: Path, model: Path, browser
):
    with http_server(tmp_path) as running:
        page = browser.new_page()
        page.goto(running.url + "/")
        page.wait_for_selector("#statusbar .model")
        assert page.inner_text("#statusbar [data-role=embed]") == "embed model ✓"
        assert "tansaku embed" in page.locator("#statusbar .gap code").all_inner_texts()


def test_a_key_that_changes_nothing_sends_nothing_and_enter_searches_again(server: Server, browser):
    page = browser.new_page()
    sent = _bodies(page, "/search")
    page.goto(server.url + "/")
    page.keyboard.press("/")
    page.keyboard.type("restore")
    page.wait_for_selector("#results li")
    page.wait_for_timeout(300)
    before = len(sent)
    page.keyboard.type(" ")  # the same query once trimmed
    page.wait_for_timeout(400)
    assert len(sent) == before
    with page.expect_response(lambda r: r.url.endswith("/search")):
        page.keyboard.press("Enter")
    assert len(sent) == before + 1 and sent[-1]["query"] == "restore"


def test_without_an_index_the_status_bar_says_how_to_make_one(tmp_path: Path, browser):
    with http_server(tmp_path) as running:
        page = browser.new_page()
        page.goto(running.url + "/")
        page.wait_for_selector("#statusbar .gap")
        assert "0 documents in 0 collections" in page.inner_text("#statusbar")
        assert "tansaku collection add PATH" in page.locator("#statusbar .gap code").all_inner_texts()
        page.fill("#q", "restore")
        page.wait_for_selector("#status .error")
        # An error with its command, never "0 results".
        assert page.locator("#results li").count() == 0 and "results" not in page.inner_text("#status")
        assert "tansaku collection add PATH" in page.inner_text("#status")
