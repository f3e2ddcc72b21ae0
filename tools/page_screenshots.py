#!/usr/bin/env python3
"""Take the README's screenshots of the search page: an English query, a Chinese query, an opened
passage, and a phone's width, over the repository's sample documents and fixture transcripts.

    .venv/bin/python tools/page_screenshots.py [--out docs/images]

Not part of the installed package. Needs the system Chromium (/usr/bin/chromium) and, for the
Chinese glyphs, a CJK font (Debian: fonts-noto-cjk); without one they show as boxes. A sandbox
(its own config and index in a temporary folder) indexes the fixtures; nothing else is touched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
VIEWPORT = {"width": 860, "height": 560}  # small files, still readable in the README
PHONE = {"width": 360, "height": 740}
SHOTS = ("page-results-en.png", "page-results-zh.png", "page-passage.png", "page-phone.png")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tansaku(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "-m", "tansaku", *args], env=env, check=True, stdout=subprocess.DEVNULL)


def shoot(url: str, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport=VIEWPORT, color_scheme="light")
        page.goto(url + "/")
        page.wait_for_selector("#statusbar .counts")

        # The page says when an answer is painted; each search waits for its own.
        page.evaluate(
            "() => window.addEventListener('tansaku:painted',"
            " () => { window.__painted = (window.__painted || 0) + 1; })"
        )

        def search(query: str) -> None:
            painted = page.evaluate("() => window.__painted || 0")
            page.fill("#q", query)
            page.wait_for_function("(n) => (window.__painted || 0) > n", arg=painted)
            page.wait_for_timeout(300)

        search("restore snapshot")
        page.screenshot(path=str(out / "page-results-en.png"))
        search("文件 权限")
        page.screenshot(path=str(out / "page-results-zh.png"))
        search("restore")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("Enter")
        page.wait_for_selector("#passage-md [data-line]")
        page.evaluate("() => window.scrollTo(0, 0)")
        page.wait_for_timeout(300)
        page.screenshot(path=str(out / "page-passage.png"))
        # A phone's width: the results wrap, the keyboard's focus on the second one.
        page.set_viewport_size(PHONE)
        page.keyboard.press("Escape")
        search("backup restore")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowDown")
        page.wait_for_timeout(300)
        page.evaluate("() => window.scrollTo(0, 0)")
        page.screenshot(path=str(out / "page-phone.png"))
        browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="tansaku-shots-"))
    env = {
        **os.environ,
        "HOME": str(root),
        "TANSAKU_CONFIG_DIR": str(root / "config"),
        "TANSAKU_INDEX_PATH": str(root / "index.sqlite"),
        "TANSAKU_MODEL_DIR": str(root / "models"),
        "PYTHONPATH": str(REPO / "src"),
    }
    env.pop("TANSAKU_HTTP_TOKEN", None)
    process = None
    try:
        shutil.copytree(REPO / "fixtures" / "sample", root / "sample")
        shutil.copytree(REPO / "fixtures" / "transcripts" / "claude", root / "claude")
        tansaku(env, "collection", "add", str(root / "sample"), "--name", "sample")
        tansaku(env, "collection", "add", "--type", "claude", str(root / "claude"))
        tansaku(env, "context", "add", "sample/guides", "How-to guides for the backup tool")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        process = subprocess.Popen(
            [sys.executable, "-m", "tansaku", "mcp", "--http", "--port", str(port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the server did not start") from None
                time.sleep(0.2)
        shoot(url, args.out)
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=15)
        shutil.rmtree(root, ignore_errors=True)
    for name in SHOTS:
        print(f"{args.out / name}: {(args.out / name).stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
