"""The search page at `/`: its headers, its assets, and (in a real Chromium) typing and IME safety,
the words it marks, its status line, folded warnings, keys, Markdown passages and a phone's width."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .models_fixture import requires_llama, requires_minilm
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


def test_the_page_s_files_load_without_the_token_and_nothing_else_does(indexed: Path, tmp_path: Path):
    from tansaku.serve import guard, page

    assert page.PUBLIC_PATHS <= guard._TOKENLESS_PATHS  # guard lists them without importing starlette
    token = "t" * 40
    with http_server(tmp_path, env={"TANSAKU_HTTP_TOKEN": token}) as running:
        for path in sorted(page.PUBLIC_PATHS):
            assert running.get(path).status == 200, path
        assert running.get("/status").status == 401
        assert running.get("/status", headers={"Authorization": f"Bearer {token}"}).status == 200


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
    # may show before the whole word's: wait for the last query's answer, then check its marks.
    page.wait_for_function(
        "() => document.querySelector('#q').value === 'restore' && document.querySelector('#results mark')",
        timeout=10_000,
    )
    page.wait_for_timeout(300)
    assert "Nightly backups" in page.inner_text("#results")
    marked = {m.lower() for m in page.locator("#results mark").all_inner_texts()}
    assert marked and all(m.startswith("restor") for m in marked), marked  # Restoring, restore
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
    page.wait_for_selector("#passage-md h2[data-line='6']")
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
    assert page.is_visible("#passage-md")


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
    page.wait_for_selector("#statusbar .counts")
    bar = page.inner_text("#statusbar")
    assert "13 documents in 1 collection · vectors: none (0 of 13 chunks)" in bar
    page.click("#statusbar details.warnings summary")  # the gaps, folded into one line
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
        page.click("#statusbar details.warnings summary")
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


@pytest.mark.sqlite_only("an index that does not exist yet (a database is created by the test run)")
def test_without_an_index_the_status_bar_says_how_to_make_one(tmp_path: Path, browser):
    with http_server(tmp_path) as running:
        page = browser.new_page()
        page.goto(running.url + "/")
        page.wait_for_selector("#statusbar details.warnings")
        page.click("#statusbar details.warnings summary")
        assert "0 documents in 0 collections" in page.inner_text("#statusbar")
        assert "tansaku collection add PATH" in page.locator("#statusbar .gap code").all_inner_texts()
        page.fill("#q", "restore")
        page.wait_for_selector("#status .error")
        # An error with its command, never "0 results".
        assert page.locator("#results li").count() == 0 and "results" not in page.inner_text("#status")
        assert "tansaku collection add PATH" in page.inner_text("#status")


# A document with the words of issue 39: "binary search" among words that hold the query's
# letters ("Checking", "a", "I"), Markdown of every kind the page renders, hostile HTML, and a
# line too long for a phone.
SEARCH_MD = """\
# Searching sorted arrays

Checking a sorted array with binary search: how do I find it in a logarithmic number of steps?

## Steps

- Pick the *middle* element
- Compare it with the target
  - smaller: search the right half
- Repeat until found

```python
def binary_search(items, target):
    return bisect.bisect_left(items, target)
```

Use `bisect` from the **standard** library. See [the docs](https://docs.python.org/3/library/bisect.html)
or [this](javascript:alert(1)).

<img src=x onerror="window.__xss = 1"> <script>window.__xss = 2</script>

/srv/archive/a-very-long-path-without-any-break-at-all/that-keeps-going/and-going/and-going/past-any-phone-screen.md
"""
WIDE = 360  # a phone's width in CSS pixels


@pytest.fixture
def wordy(cli: Any, sample: Path, tmp_path: Path) -> Iterator[Server]:
    """A server over the sample files and SEARCH_MD (notes/search.md)."""
    (sample / "notes" / "search.md").write_text(SEARCH_MD, encoding="utf-8")
    assert cli("collection", "add", sample, "--name", "sample").exit_code == 0
    with http_server(tmp_path) as running:
        yield running


def _marks(page: Any, scope: str = "#results") -> list[dict[str, str]]:
    """Each <mark> in ``scope`` with the characters just before and after it in its line."""
    return page.evaluate(
        """(scope) => [...document.querySelectorAll(scope + ' mark')].map((m) => {
             const before = m.previousSibling ? m.previousSibling.textContent : '';
             const after = m.nextSibling ? m.nextSibling.textContent : '';
             return {text: m.textContent, before: before.slice(-1), after: after.slice(0, 1)}; })""",
        scope,
    )


def _typed(page: Any, server: Server, query: str, **viewport: int) -> None:
    page.goto(server.url + "/")
    page.wait_for_selector("#statusbar .counts")
    page.fill("#q", query)
    page.wait_for_function(
        "(q) => document.querySelector('#results li') && document.querySelector('#q').value === q"
        " && document.querySelector('#status .count')",
        arg=query,
    )


def test_only_whole_words_of_the_query_are_marked(wordy: Server, browser):
    page = browser.new_page()
    # "how", "do" and "i" are common words the search does not require: never marked, and no
    # letter of "Checking" or "a" either (the old page marked every "i" and "a" it saw).
    _typed(page, wordy, "how do i binary search")
    page.wait_for_selector("#results li:has-text('Searching sorted arrays') mark")
    marks = _marks(page)
    assert {m["text"].lower() for m in marks} == {"binary", "search"}
    for m in marks:  # whole words: no letter or digit runs on past either end
        assert not re.match(r"\w", m["before"] + " ") and not re.match(r"\w", m["after"] + " "), m
    line = page.locator("#results li:has-text('Searching sorted arrays') .snippet").inner_text()
    assert "Checking a sorted array with binary search" in line
    hit = page.locator("#results li:has-text('Searching sorted arrays') .snippet mark")
    assert hit.all_inner_texts() == ["binary", "search"]


def test_chinese_marks_are_the_segmenter_s_words(server: Server, browser):
    page = browser.new_page()
    _typed(page, server, "文件 权限")
    page.wait_for_selector("#results mark")
    texts = {m["text"] for m in _marks(page)}
    # Words as the index cut them, never single characters of them.
    assert texts and texts <= {"文件", "权限", "文件权限"}, texts


def test_the_status_line_follows_an_update(indexed: Path, cli: Any, tmp_path: Path, browser):
    with http_server(tmp_path) as running:
        page = browser.new_page()
        page.goto(running.url + "/")
        page.wait_for_selector("#statusbar .counts")
        assert page.inner_text("#index-counts").startswith("13 documents in 1 collection")
        assert page.inner_text("#chips button[data-collection=sample]") == "sample 13"
        (indexed / "notes" / "later.md").write_text("# Later\n\nrestore drills every quarter\n", "utf-8")
        assert cli("update").exit_code == 0
        page.fill("#q", "restore")  # the answer carries the index's counts: no reload needed
        page.wait_for_function("() => document.querySelector('#index-counts').textContent.startsWith('14 ')")
        assert page.inner_text("#chips button[data-collection=sample]") == "sample 14"


@requires_llama
@requires_minilm
def test_the_status_line_follows_embedding(indexed: Path, cli: Any, model: Path, tmp_path: Path, browser):
    with http_server(tmp_path) as running:
        page = browser.new_page()
        page.goto(running.url + "/")
        page.wait_for_selector("#statusbar .counts")
        counts = page.locator("#index-counts")
        assert counts.get_attribute("data-vector-state") == "none" and "vectors: none" in counts.inner_text()
        page.click("#statusbar details.warnings summary")
        assert "tansaku embed" in page.locator("#statusbar .gap code").all_inner_texts()
        assert cli("embed").exit_code == 0  # another process fills the vectors
        page.select_option("#mode", "vsearch")
        page.fill("#q", "restore a file from a snapshot")
        page.wait_for_selector("#results li")
        # The vector results and the line under them agree: the answer said what the index holds.
        page.wait_for_function("() => document.querySelector('#index-counts').dataset.vectorState === 'full'")
        assert "vectors: full (13 of 13 chunks)" in counts.inner_text()
        # ... and /status was asked again, so the gap that asked for `tansaku embed` is gone.
        page.wait_for_function(
            "() => ![...document.querySelectorAll('#statusbar .gap code')]"
            ".some((c) => c.textContent === 'tansaku embed')"
        )


def test_warnings_fold_into_one_line(server: Server, browser):
    page = browser.new_page()
    _typed(page, server, "restore xyzzy")
    page.wait_for_selector("#status details.warnings")
    folded = page.locator("#status details.warnings")
    assert folded.locator("summary").inner_text() == "1 warning"
    assert not folded.evaluate("(d) => d.open") and folded.locator("li").first.is_hidden()
    folded.locator("summary").click()
    item = folded.locator("li").first
    assert item.is_visible() and item.locator("code.code").inner_text() == "PARTIAL_MATCH"
    assert "xyzzy found nowhere" in item.inner_text()
    # The index's gaps (three missing models here) are one line too, under the counts.
    footer = page.locator("#statusbar details.warnings")
    assert footer.locator("summary").inner_text() == "3 warnings"
    assert page.locator("#statusbar").evaluate("(f) => f.getBoundingClientRect().height") < 40
    # A warning list a person opened stays open for the next search.
    page.fill("#q", "restore xyzzy backups")
    page.wait_for_function(
        "() => document.querySelector('#status details.warnings li')?.textContent.includes('3 terms')"
    )
    assert page.locator("#status details.warnings").evaluate("(d) => d.open")


def test_no_console_error_and_no_missing_file_on_load(server: Server, browser):
    page = browser.new_page()
    problems: list[str] = []
    page.on(
        "console",
        lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None,
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("requestfailed", lambda r: problems.append(f"failed {r.url}"))
    _typed(page, server, "restore")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_selector("#passage-md [data-line]")
    assert problems == []
    icon = page.evaluate("() => document.querySelector('link[rel=icon]').href")
    assert icon == server.url + "/favicon.svg"
    for path in ("/favicon.svg", "/favicon.ico"):
        reply = server.get(path)
        assert reply.status == 200 and reply.headers["content-type"] == "image/svg+xml"
        assert reply.body.startswith(b"<svg")


def test_keyboard_moves_opens_and_goes_back(server: Server, browser):
    page = browser.new_page()
    _typed(page, server, "restore")
    page.wait_for_function("() => document.querySelectorAll('#results li').length >= 2")
    selected = (
        "() => [...document.querySelectorAll('#results li')].findIndex((li) => li.matches('.selected'))"
    )
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert page.evaluate(selected) == 1
    page.keyboard.press("ArrowUp")
    assert page.evaluate(selected) == 0
    first = page.locator("#results li").first
    assert first.evaluate("(li) => getComputedStyle(li).outlineStyle") != "none"  # a visible focus
    assert page.get_attribute("#q", "aria-activedescendant") == "result-0"
    page.keyboard.press("Enter")
    page.wait_for_selector("#results li.selected #passage-md [data-line]")
    page.keyboard.press("Escape")  # back to the list: the document closes, the focus stays
    assert page.is_hidden("#passage") and page.evaluate(selected) == 0
    assert page.input_value("#q") == "restore"  # Esc in a search box clears it: not here
    page.keyboard.press("ArrowDown")
    assert page.evaluate(selected) == 1
    page.keyboard.press("Escape")  # the focus goes back to the box
    assert page.evaluate(selected) == -1 and page.evaluate("() => document.activeElement.id") == "q"
    page.keyboard.press("Escape")  # and the box lets go of the keyboard; / takes it back
    assert page.evaluate("() => document.activeElement.id") != "q" and page.input_value("#q") == "restore"
    page.keyboard.press("ArrowDown")  # the arrows still move over the results from the page
    assert page.evaluate(selected) == 0
    page.keyboard.press("/")
    page.keyboard.type(" backups")
    page.wait_for_function("() => document.querySelector('#q').value === 'restore backups'")
    # While an input method composes, its keys are its own: no move, no open.
    page.evaluate("""() => { const q = document.getElementById('q');
        q.dispatchEvent(new CompositionEvent('compositionstart'));
        for (const key of ['ArrowDown', 'Enter'])
            q.dispatchEvent(new KeyboardEvent('keydown', {key, isComposing: true, bubbles: true})); }""")
    assert page.is_hidden("#passage")


def test_a_passage_reads_as_markdown_and_never_as_html(wordy: Server, browser):
    page = browser.new_page()
    _typed(page, wordy, "binary search")
    page.locator("#results li", has_text="Searching sorted arrays").locator(".title").click()
    md = page.locator("#passage-md")
    md.locator("h2").wait_for()
    assert md.locator("h2").inner_text() == "Steps" and md.locator("h2").get_attribute("data-line") == "5"
    assert (
        md.locator("ul > li").count() == 4
        and md.locator("ul ul > li").inner_text() == "smaller: search the right half"
    )
    assert md.locator("ul em").inner_text() == "middle"
    code = md.locator("pre.code code")
    assert code.get_attribute("data-lang") == "python" and code.inner_text().startswith(
        "def binary_search(items"
    )
    assert (
        md.locator("p code").first.inner_text() == "bisect"
        and md.locator("strong").inner_text() == "standard"
    )
    links = md.locator("a")
    assert (
        links.count() == 1 and links.get_attribute("href") == "https://docs.python.org/3/library/bisect.html"
    )
    assert md.locator(".link-text").inner_text() == "this"  # javascript: is never a link
    # The HTML in the file is text on the page: no element made of it, no script run.
    assert md.locator("img, script, iframe").count() == 0
    assert '<img src=x onerror="window.__xss = 1">' in md.inner_text()
    assert page.evaluate("() => window.__xss") is None
    page.click("#view-source")  # the lines as they are in the file
    assert page.is_visible("#passage-lines") and page.is_hidden("#passage-md")
    assert "5: ## Steps" in page.inner_text("#passage-lines")


def test_each_result_has_the_command_for_its_line(wordy: Server, browser):
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    _typed(page, wordy, "binary search")
    hit = page.locator("#results li", has_text="Searching sorted arrays")
    assert hit.locator(".where code").inner_text() == "tansaku get sample/notes/search.md:3"
    hit.locator("button", has_text="copy command").click()
    assert page.evaluate("() => navigator.clipboard.readText()") == "tansaku get sample/notes/search.md:3"
    path_line = hit.locator("button", has_text="copy path:line")
    assert path_line.get_attribute("title").endswith("/sample/notes/search.md:3")
    assert page.is_hidden("#passage")  # copying does not open the result
    context.close()


def test_a_phone_width_window_never_scrolls_sideways(wordy: Server, browser):
    page = browser.new_page(viewport={"width": WIDE, "height": 740})
    _typed(page, wordy, "binary search")
    page.locator("#results li", has_text="Searching sorted arrays").locator(".title").click()
    page.wait_for_selector("#passage-md pre.code")
    page.click("#passage-md >> text=Steps")  # nothing but reading
    for scope in ("document.documentElement", "document.body"):
        width, client = page.evaluate(f"() => [{scope}.scrollWidth, {scope}.clientWidth]")
        assert width <= client == WIDE, (scope, width, client)
    page.click("#view-source")
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= WIDE
