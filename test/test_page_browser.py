"""The search page at `/`: its headers, its assets, and (in a real Chromium) typing and IME safety."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from .serve_support import Server, http_server

pytestmark = pytest.mark.subprocess
CHROMIUM = "/usr/bin/chromium"
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
    page.wait_for_selector("#results li")
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
