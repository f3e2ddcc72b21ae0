"""get and multi-get: references, docids, line ranges and byte limits."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from .made_files import marked_up_page

pytestmark = [pytest.mark.usefixtures("indexed"), pytest.mark.both_backends]


def docid_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:6]


def source_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


@pytest.mark.parametrize(
    "ref",
    [
        "tansaku://sample/guides/install.md",
        "sample/guides/install.md",
        "guides/install.md",
        "{docid}",
        "#{docid}",
        "{upper}",
        "{disk}",
    ],
)
def test_get_accepts_every_kind_of_reference(cli, indexed: Path, ref: str):
    target = indexed / "guides" / "install.md"
    docid = docid_of(target)
    ref = ref.format(docid=docid, upper=docid.upper(), disk=target)
    data = cli("get", ref, "--json").json()
    assert data["virtual_path"] == "tansaku://sample/guides/install.md"
    assert data["docid"] == f"#{docid}"
    assert data["title"] == "Installing the backup tool"  # from front matter
    assert list(data["lines"]) == source_lines(target)
    assert data["truncated"] is False


def test_get_line_range_suffix_and_flags_agree(cli, indexed: Path):
    lines = source_lines(indexed / "guides" / "install.md")
    by_suffix = cli("get", "sample/guides/install.md:8:3", "--json").json()
    by_flags = cli("get", "sample/guides/install.md", "--from", "8", "-l", "3", "--json").json()
    assert by_suffix["lines"] == by_flags["lines"] == lines[7:10]
    assert by_suffix["from_line"] == 8
    assert by_suffix["truncated"] is True
    assert by_suffix["total_lines"] == len(lines)


def test_get_prints_line_numbers_by_default_and_says_when_it_stops(cli):
    out = cli("get", "sample/guides/install.md:8:2").stdout
    assert out.splitlines()[0].strip().startswith("8: ")
    assert "truncated" in out and "lines 8-9" in out
    raw = cli("get", "sample/guides/install.md:8:2", "--no-line-numbers").stdout
    assert (
        raw.splitlines()[0]
        == "The backup tool runs on Linux and macOS. Install it with your package manager."
    )


def test_get_max_bytes_cuts_at_a_line_and_says_so(cli, indexed: Path):
    data = cli("get", "sample/guides/install.md", "--max-bytes", "60", "--json").json()
    assert data["truncated"] is True
    assert sum(len(line.encode()) + 1 for line in data["lines"]) <= 60
    assert data["lines"] == source_lines(indexed / "guides" / "install.md")[: len(data["lines"])]


def test_get_full_path_prints_the_disk_path(cli, indexed: Path):
    out = cli("get", "sample/guides/install.md", "--files", "--full-path").stdout
    assert out.strip() == str(indexed / "guides" / "install.md")


def test_get_miss_suggests_similar_paths_and_exits_1(cli):
    result = cli("get", "sample/guides/instal.md", "--json")
    assert result.exit_code == 1
    error = result.error()
    assert error["code"] == "DOC_NOT_FOUND"
    assert "tansaku://sample/guides/install.md" in error["hint"]
    assert result.stdout == ""
    text = cli("get", "sample/guides/instal.md")
    assert text.exit_code == 1 and "similar" in text.stderr


def test_get_unknown_docid_is_not_found(cli):
    result = cli("get", "#ffffff", "--json")
    assert result.exit_code == 1
    assert result.error()["code"] == "DOC_NOT_FOUND"


def test_ambiguous_docid_prefix_lists_candidates(cli, tmp_path: Path):
    # Find two contents whose SHA-256 share the first 4 hex chars, deterministically.
    folder = tmp_path / "clash"
    folder.mkdir()
    seen: dict[str, str] = {}
    for i in range(200_000):
        text = f"note {i}\n"
        prefix = hashlib.sha256(text.encode()).hexdigest()[:4]
        if prefix in seen:
            (folder / "a.md").write_text(seen[prefix], encoding="utf-8")
            (folder / "b.md").write_text(text, encoding="utf-8")
            break
        seen[prefix] = text
    assert cli("collection", "add", folder, "--name", "clash").exit_code == 0
    result = cli("get", prefix, "--json")
    assert result.exit_code == 2
    error = result.error()
    assert error["code"] == "DOCID_AMBIGUOUS"
    assert set(error["details"]["candidates"]) == {"tansaku://clash/a.md", "tansaku://clash/b.md"}
    # The full 6-character docids resolve to the right files.
    for name in ("a.md", "b.md"):
        data = cli("get", "#" + docid_of(folder / name), "--json").json()
        assert data["virtual_path"] == f"tansaku://clash/{name}"


def test_multi_get_glob_returns_matching_documents(cli):
    data = cli("multi-get", "sample/notes/*.md", "--json").json()
    assert [d["virtual_path"] for d in data["documents"]] == [
        "tansaku://sample/notes/2024-03-meeting.md",
        "tansaku://sample/notes/2024-04-meeting.md",
        "tansaku://sample/notes/ideas.md",
    ]
    assert data["skipped"] == []
    assert data["max_bytes"] == 10240


def test_multi_get_virtual_glob_comma_list_and_docids(cli, indexed: Path):
    docid = docid_of(indexed / "reference" / "config.md")
    pattern = f"tansaku://sample/zh/*.md,sample/guides/install.md,#{docid}"
    data = cli("multi-get", pattern, "--json").json()
    got = [d["virtual_path"] for d in data["documents"]]
    assert got[:3] == sorted(got[:3]) and all("/zh/" in p for p in got[:3])
    assert got[3:] == ["tansaku://sample/guides/install.md", "tansaku://sample/reference/config.md"]


def test_multi_get_skips_large_files_with_a_reason_never_cuts_them(cli, indexed: Path):
    big = indexed / "notes" / "big.md"
    big.write_text("# Big\n" + "filler line for size\n" * 800, encoding="utf-8")
    cli("update")
    data = cli("multi-get", "sample/notes/*.md", "--json").json()
    skipped = {s["virtual_path"]: s for s in data["skipped"]}
    assert "tansaku://sample/notes/big.md" in skipped
    assert skipped["tansaku://sample/notes/big.md"]["size"] == big.stat().st_size
    assert "max-bytes" in skipped["tansaku://sample/notes/big.md"]["reason"]
    assert all(d["truncated"] is False for d in data["documents"])
    assert "tansaku://sample/notes/big.md" not in [d["virtual_path"] for d in data["documents"]]
    text = cli("multi-get", "sample/notes/*.md").stdout
    assert "skipped tansaku://sample/notes/big.md" in text
    raised = cli("multi-get", "sample/notes/*.md", "--max-bytes", "100000", "--json").json()
    assert raised["skipped"] == []


def test_multi_get_line_limit_marks_truncation(cli):
    data = cli("multi-get", "sample/notes/*.md", "-l", "2", "--json").json()
    assert all(len(d["lines"]) <= 2 for d in data["documents"])
    assert all(d["truncated"] for d in data["documents"])


def test_multi_get_no_match_warns(cli):
    result = cli("multi-get", "sample/nothing/*.md", "--json")
    assert result.exit_code == 0
    assert result.json()["documents"] == []
    assert [w["code"] for w in result.json()["warnings"]] == ["NO_MATCH"]


def test_multi_get_bad_glob_is_a_usage_error(cli):
    result = cli("multi-get", "sample/[oops.md", "--json")
    assert result.exit_code == 2
    assert result.error()["code"] == "BAD_GLOB"


@pytest.mark.parametrize("fmt", ["cli", "json", "csv", "md", "xml", "files"])
def test_get_and_multi_get_render_in_every_format(cli, fmt, snapshot, indexed: Path):
    one = cli("get", "sample/zh/权限.md:1:4", "--format", fmt)
    many = cli("multi-get", "sample/notes/2024-*.md", "-l", "3", "--format", fmt)
    assert one.exit_code == 0 and many.exit_code == 0
    assert (one.stdout + many.stdout).replace(str(indexed), "/SAMPLE") == snapshot


def test_ls_lists_files_with_docids(cli, indexed: Path):
    data = cli("ls", "sample/guides", "--json").json()
    assert [entry["virtual_path"] for entry in data] == [
        "tansaku://sample/guides/backups.md",
        "tansaku://sample/guides/compression.md",
        "tansaku://sample/guides/install.md",
    ]
    assert data[2]["docid"] == "#" + docid_of(indexed / "guides" / "install.md")


def test_get_from_past_the_end_is_an_error_naming_the_length(cli, indexed: Path):
    total = len(source_lines(indexed / "guides" / "install.md"))
    last = cli("get", "sample/guides/install.md", "--from", str(total), "--json")
    assert last.exit_code == 0 and len(last.json()["lines"]) == 1
    result = cli("get", "sample/guides/install.md", "--from", "5000", "--json")
    assert result.exit_code == 1
    assert result.stdout == ""
    error = result.error()
    assert error["code"] == "LINE_OUT_OF_RANGE"
    assert f"has {total} lines" in error["message"] and "5000" in error["message"]
    text = cli("get", f"sample/guides/install.md:{total + 1}")
    assert text.exit_code == 1 and f"has {total} lines" in text.stderr


def test_get_of_a_deleted_file_says_it_is_gone(cli, indexed: Path):
    (indexed / "guides" / "install.md").unlink()
    data = cli("get", "sample/guides/install.md", "--json").json()
    assert data["missing"] is True and data["stale"] is True
    out = cli("get", "sample/guides/install.md").stdout
    assert "no longer on disk" in out.splitlines()[0]
    assert "changed on disk" not in out
    # A file changed but still there is stale, not gone.
    (indexed / "guides" / "backups.md").write_text("# Changed\n", encoding="utf-8")
    changed = cli("get", "sample/guides/backups.md", "--json").json()
    assert changed["stale"] is True and changed["missing"] is False


def test_multi_get_line_limit_applies_max_bytes_to_the_lines_shown(cli, indexed: Path):
    big = indexed / "notes" / "big.md"
    big.write_text("# Big\n" + "filler line for size\n" * 800, encoding="utf-8")
    assert big.stat().st_size > 10 * 1024
    cli("update")
    data = cli("multi-get", "sample/notes/*.md", "-l", "3", "--json").json()
    shown = {d["virtual_path"]: d for d in data["documents"]}
    assert shown["tansaku://sample/notes/big.md"]["lines"] == ["# Big"] + ["filler line for size"] * 2
    assert shown["tansaku://sample/notes/big.md"]["truncated"] is True
    assert data["skipped"] == []
    # Lines larger than the limit are still skipped whole, with the reason.
    tight = cli("multi-get", "sample/notes/big.md", "-l", "3", "--max-bytes", "20", "--json").json()
    assert tight["documents"] == []
    assert "first 3 lines" in tight["skipped"][0]["reason"]


def test_multi_get_max_bytes_counts_the_text_printed_not_the_file(cli, tmp_path: Path):
    folder = tmp_path / "pages"
    folder.mkdir()
    words = marked_up_page(folder / "howto.html")
    assert (folder / "howto.html").stat().st_size > 2 * 10240 > 2 * len(words)
    assert cli("collection", "add", folder, "--name", "pages", "--formats", "html").exit_code == 0
    result = cli("multi-get", "pages/*.html", "--json")
    assert result.exit_code == 0
    data = result.json()
    [page] = data["documents"]
    assert data["skipped"] == [] and page["virtual_path"] == "tansaku://pages/howto.html"
    assert "Paragraph 0099 of the howto, plain words." in page["lines"]
    printed = sum(len(line.encode("utf-8")) + 1 for line in page["lines"])
    # Under a limit below its text it is skipped, the reason giving the text's size.
    tight = cli("multi-get", "pages/*.html", "--max-bytes", "1000", "--json")
    assert tight.exit_code == 1  # every match skipped: nothing printed is not a success
    [skipped] = tight.json()["skipped"]
    assert printed - 1 <= skipped["text_bytes"] <= printed
    assert f"its text is {skipped['text_bytes']} bytes, over --max-bytes 1000" in skipped["reason"]
    assert skipped["size"] == (folder / "howto.html").stat().st_size
    assert [w["code"] for w in tight.json()["warnings"]] == ["ALL_SKIPPED"]
    shown = cli("multi-get", "pages/*.html", "--max-bytes", "1000")
    assert shown.exit_code == 1
    assert "skipped tansaku://pages/howto.html: its text is" in shown.stdout
    assert "nothing printed: the 1 document that matches was skipped" in shown.stdout + shown.stderr
    # get's --max-bytes is about the same text: the whole page fits its default.
    whole = cli("get", "pages/howto.html", "--json").json()
    assert whole["truncated"] is False and whole["lines"] == page["lines"]


def test_multi_get_says_when_every_match_was_skipped_and_lists_each(cli, indexed: Path):
    for name in ("one.md", "two.md"):  # two texts (copies of one text would be one document)
        text = "# Long\n" + f"a long line of words ({name[:3]})\n" * 100
        (indexed / "notes" / name).write_text(text, encoding="utf-8")
    cli("update")
    result = cli("multi-get", "sample/notes/one.md,sample/notes/two.md", "--max-bytes", "500")
    assert result.exit_code == 1
    one = "skipped tansaku://sample/notes/one.md: its text is 2707 bytes, over --max-bytes 500"
    assert one in result.stdout
    assert "skipped tansaku://sample/notes/two.md" in result.stdout
    assert "all 2 documents that match were skipped" in result.stdout + result.stderr
    # One that fits: printed, exit 0, the other still listed.
    mixed = cli("multi-get", "sample/notes/one.md,sample/notes/ideas.md", "--max-bytes", "500", "--json")
    assert mixed.exit_code == 0 and mixed.json()["warnings"] == []
    assert [s["virtual_path"] for s in mixed.json()["skipped"]] == ["tansaku://sample/notes/one.md"]


def test_multi_get_prints_a_text_once_with_its_other_paths(cli, tmp_path: Path):
    # Issue 38: copies of one text (a copied file, a symlink) are one document with its paths.
    folder = tmp_path / "copies"
    folder.mkdir()
    (folder / "a.md").write_text("# Wombat burrows\n\nDeep and long.\n", encoding="utf-8")
    (folder / "b.md").write_text("# Wombat burrows\n\nDeep and long.\n", encoding="utf-8")
    (folder / "c.md").write_text("# Numbat\n\nEats termites.\n", encoding="utf-8")
    assert cli("collection", "add", folder, "--name", "copies").exit_code == 0
    data = cli("multi-get", "copies/*.md", "--json").json()
    shown = [(d["virtual_path"], d.get("also_at", [])) for d in data["documents"]]
    assert shown == [("tansaku://copies/a.md", ["tansaku://copies/b.md"]), ("tansaku://copies/c.md", [])]
    # Named alone, the copy is printed at its own path, the other one listed.
    [only] = cli("multi-get", "copies/b.md", "--json").json()["documents"]
    assert only["virtual_path"] == "tansaku://copies/b.md" and only["also_at"] == ["tansaku://copies/a.md"]
    text = cli("multi-get", "copies/*.md").stdout
    assert text.count("Deep and long.") == 1
    assert "is at 2 paths: showing tansaku://copies/a.md; also at: tansaku://copies/b.md]" in text
