"""Docs that are generated must be current; the README's commands must exist."""

from __future__ import annotations

import re

from tansaku.cli.docgen import reference

from .conftest import REPO


def test_cli_reference_is_generated_from_the_parser():
    current = (REPO / "docs" / "cli-reference.md").read_text(encoding="utf-8")
    assert current == reference(), "run: python -m tansaku.cli.docgen > docs/cli-reference.md"


def test_readme_test_line_is_what_ci_runs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    test_line = blocks[1].strip()
    assert "pytest" in test_line
    assert test_line.replace(" -q ", " ") in ci.replace(" -q ", " ")


def test_changelog_has_an_unreleased_section_on_top():
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", changelog, re.M)
    assert headings[0] == "Unreleased"
