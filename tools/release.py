#!/usr/bin/env python3
"""Cut a tansaku release from the ``## Unreleased`` section of CHANGELOG.md.

    python tools/release.py VERSION [--dry-run [--check]] [--date YYYY-MM-DD] [--hooks FILE]
    python tools/release.py notes VERSION|X.Y

Not part of the installed package. The procedure, the hooks file format and the credit format are
in docs/releasing.md. It commits and tags locally; it never pushes or uploads anything.
"""

from __future__ import annotations

import argparse
import datetime
import difflib
import importlib.util
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

# The repository is the one this file lives in, wherever the command is run from: a rehearsal in
# a clone releases the clone.
ROOT = Path(__file__).resolve().parent.parent
CHANGELOG = "CHANGELOG.md"
VERSION_FILE = "src/tansaku/__init__.py"
README = "README.md"

EXIT_REFUSED = 1
EXIT_HOOK_FAILED = 3
EXIT_GIT_FAILED = 4

DEFAULT_HOOKS = (
    "ruff check src test evals tools",
    "pytest",
    "python -m build --sdist --wheel --outdir {dist} .",
    "twine check --strict {dist}/*",
    "{readme_line}",
)

_VERSION = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:(a|b|rc)(0|[1-9]\d*))?")
_SERIES = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)")
# PEP 440 order: a final release comes after its own a, b and rc pre-releases.
_STAGE_ORDER = {"a": 0, "b": 1, "rc": 2, None: 3}
_UNRELEASED = re.compile(r"## \[?Unreleased\]?\s*")
_RELEASED = re.compile(r"## \[?([^\]\s]+)\]?(?:\s+-\s+\S+)?\s*")
_VERSION_LINE = re.compile(r'^__version__ = "([^"]*)"$', re.M)
_CREDIT = re.compile(r"\(thanks (@[A-Za-z0-9-]+(?:, @[A-Za-z0-9-]+)*), (#\d+(?:, #\d+)*)\)$")
_CREDIT_LIKE = re.compile(r"\(\s*thanks\b", re.I)
_SHELL_BLOCK = re.compile(r"^```(?:bash|sh|shell)\n(.*?)^```", re.M | re.S)
_DOT_VENV = re.compile(r"(?<![\w./-])\.venv(?![\w-])")
_PIP_INSTALL_DOT = re.compile(r"(pip install(?:\s+-[-\w]+)*)\s+\.(?=\s|$)")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PLACEHOLDER = re.compile(r"\{(dist|wheel|sdist|venv|version|python)\}")


class Refused(Exception):
    """A precondition that no hook or retry can fix; the message says what to do."""


# --- versions -------------------------------------------------------------------------------------


def version_key(text: str) -> tuple[int, ...] | None:
    match = _VERSION.fullmatch(text)
    if match is None:
        return None
    major, minor, patch, stage, number = match.groups()
    return (int(major), int(minor), int(patch), _STAGE_ORDER[stage], int(number or 0))


def current_version(version_file: str) -> str | None:
    match = _VERSION_LINE.search(version_file)
    return match.group(1) if match else None


def with_version(version_file: str, version: str) -> str:
    return _VERSION_LINE.sub(f'__version__ = "{version}"', version_file, count=1)


# --- CHANGELOG ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    start: int  # index of its "## " line
    end: int  # index after its last line
    heading: str


def split_sections(lines: Sequence[str]) -> list[Section]:
    starts = [i for i, line in enumerate(lines) if line.startswith("## ")]
    ends = [*starts[1:], len(lines)]
    return [Section(s, e, lines[s].rstrip("\n")) for s, e in zip(starts, ends, strict=True)]


def unreleased_section(lines: Sequence[str]) -> Section | None:
    return next((s for s in split_sections(lines) if _UNRELEASED.fullmatch(s.heading)), None)


def released_sections(lines: Sequence[str]) -> list[tuple[str, Section]]:
    found = []
    for section in split_sections(lines):
        match = _RELEASED.fullmatch(section.heading)
        if match and version_key(match.group(1)):
            found.append((match.group(1), section))
    return found


def entries(body: Sequence[str]) -> list[str]:
    """Each list item as one line: wrapped items continue on indented lines."""
    items: list[str] = []
    in_item = False
    for line in body:
        if line.startswith(("- ", "* ")):
            items.append(line.strip())
            in_item = True
        elif in_item and line[:1] in (" ", "\t") and line.strip():
            items[-1] += " " + line.strip()
        elif line.strip():
            in_item = False
    return items


def section_body(lines: Sequence[str], section: Section) -> list[str]:
    return list(lines[section.start + 1 : section.end])


def section_text(lines: Sequence[str], section: Section) -> str:
    return "".join(lines[section.start : section.end]).strip() + "\n"


def drop_empty_subsections(body: Sequence[str]) -> list[str]:
    # A release keeps only the "###" headings that have entries; an empty "### Fixed" says nothing.
    groups: list[list[str]] = [[]]
    for line in body:
        if line.startswith("### "):
            groups.append([])
        groups[-1].append(line)
    kept = [group for i, group in enumerate(groups) if i == 0 or entries(group)]
    return [line for group in kept for line in group]


def trim_blank_lines(body: Sequence[str]) -> list[str]:
    # One blank line between sections and one newline at the end of the file, whatever the
    # dropped subsections and hand edits left behind.
    lines = [line.rstrip("\n") + "\n" for line in body]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def credits(items: Sequence[str]) -> dict[str, list[str]]:
    """Who to thank, in the order they first appear, with their pull requests."""
    people: dict[str, list[str]] = {}
    for item in items:
        match = _CREDIT.search(item)
        if match is None:
            continue
        prs = match.group(2).split(", ")
        for name in match.group(1).split(", "):
            known = people.setdefault(name, [])
            known.extend(pr for pr in prs if pr not in known)
    return people


def malformed_credits(items: Sequence[str]) -> list[str]:
    # A typo in a credit would silently drop someone from the thanks line of an immutable tag.
    return [item for item in items if _CREDIT_LIKE.search(item) and not _CREDIT.search(item)]


def thanks_line(people: dict[str, list[str]]) -> str | None:
    if not people:
        return None
    return "Thanks to " + ", ".join(f"{name} ({', '.join(prs)})" for name, prs in people.items()) + "."


def released_changelog(changelog: str, version: str, date: str) -> str:
    lines = changelog.splitlines(keepends=True)
    section = unreleased_section(lines)
    if section is None:
        raise Refused(f"{CHANGELOG} has no '## Unreleased' section")
    body = trim_blank_lines(drop_empty_subsections(section_body(lines, section)))
    rest = lines[section.end :]
    if rest:
        body.append("\n")
    head = [f"{section.heading}\n", "\n", f"## [{version}] - {date}\n", "\n"]
    thanks = thanks_line(credits(entries(body)))
    if thanks:
        head += [thanks + "\n", "\n"]
    return "".join([*lines[: section.start], *head, *body, *rest])


def release_notes(changelog: str, version: str) -> str | None:
    lines = changelog.splitlines(keepends=True)
    return next((section_text(lines, s) for v, s in released_sections(lines) if v == version), None)


def select_notes(changelog: str, selector: str) -> list[tuple[str, str]]:
    """(version, notes) of one version, or of every version of an X.Y series, newest first."""
    lines = changelog.splitlines(keepends=True)
    series = _SERIES.fullmatch(selector)
    chosen = []
    for version, section in released_sections(lines):
        key = version_key(version) or ()
        wanted = key[:2] == (int(series.group(1)), int(series.group(2))) if series else version == selector
        if wanted:
            chosen.append((version, section_text(lines, section)))
    return sorted(chosen, key=lambda pair: version_key(pair[0]) or (), reverse=True)


# --- the README line ------------------------------------------------------------------------------


def readme_install_line(readme: str) -> str:
    """The README's first shell line, installing ``{wheel}`` into ``{venv}`` instead of ``.``."""
    block = _SHELL_BLOCK.search(readme)
    lines = [line for line in (block.group(1) if block else "").splitlines() if line.strip()]
    if not lines:
        raise Refused(f"{README} has no ```bash block, so there is no set-up line to try on the wheel")
    line, venvs = _DOT_VENV.subn("{venv}", lines[0].strip())
    line, installs = _PIP_INSTALL_DOT.subn(r"\1 {wheel}", line)
    if venvs == 0 or installs != 1:
        raise Refused(
            f"{README}'s first shell line no longer reads 'python3 -m venv .venv && .venv/bin/pip install"
            f" .': update readme_install_line in tools/release.py, or pass --hooks FILE"
        )
    return line


# --- hooks ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Places:
    dist: Path
    venv: Path
    state: Path  # the hooks' tansaku config and index, away from the user's own


def load_hooks(path: Path | None) -> tuple[list[str], str]:
    if path is None:
        return list(DEFAULT_HOOKS), "the default hooks"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise Refused(f"cannot read the hooks file {path}: {exc.strerror}") from None
    hooks = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return hooks, f"the hooks in {path}"


def expand(template: str, values: dict[str, str], readme_line: str | None) -> str:
    # The README line carries placeholders of its own, so it goes in before they are filled.
    if readme_line is not None:
        template = template.replace("{readme_line}", readme_line)
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def values_for(places: Places, version: str, artifacts: bool) -> dict[str, str]:
    values = {
        "dist": shlex.quote(str(places.dist)),
        "venv": shlex.quote(str(places.venv)),
        "version": version,
        "python": shlex.quote(sys.executable),
    }
    if artifacts:
        for name, pattern in (("wheel", "*.whl"), ("sdist", "*.tar.gz")):
            found = sorted(places.dist.glob(pattern)) if places.dist.is_dir() else []
            if len(found) == 1:
                values[name] = shlex.quote(str(found[0]))
    return values


def hook_env(places: Places) -> dict[str, str]:
    env = dict(os.environ)
    # `python`, `pytest`, `ruff` and `twine` in a hook are those of the environment running the
    # release, not whichever comes first on the user's PATH.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["TANSAKU_CONFIG_DIR"] = str(places.state / "config")
    env["TANSAKU_INDEX_PATH"] = str(places.state / "index.sqlite")
    # The README line names its index (`--index sample`), and a named index's file is in the cache
    # folder whatever TANSAKU_INDEX_PATH says: the hooks get a cache folder of their own. pip's
    # cache stays the user's (a build or install must not download again, nor fail offline).
    cache = os.environ.get("XDG_CACHE_HOME", "")
    real_cache = Path(cache) if os.path.isabs(cache) else Path.home() / ".cache"
    env.setdefault("PIP_CACHE_DIR", str(real_cache / "pip"))
    env["XDG_CACHE_HOME"] = str(places.state / "cache")
    return env


def missing_tool(command: str, path: str) -> str | None:
    """Why the first program of a hook cannot run: better known now than after the test suite."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):
        words.pop(0)
    if not words or not re.fullmatch(r"[\w./+-]+", words[0]):
        return None
    program = shutil.which(words[0], path=path)
    if program is None:
        hint = "" if words[0].startswith("python") else f" (pip install {words[0]})"
        return f"'{words[0]}' is neither next to {sys.executable} nor on the PATH{hint}"
    runs_module = len(words) > 2 and words[1] == "-m" and _same_file(program, sys.executable)
    if runs_module and importlib.util.find_spec(words[2]) is None:
        return f"the Python module '{words[2]}' is not installed here (pip install {words[2]})"
    return None


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def run_hook(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # Output is kept and shown only on failure: a passing build log is noise in a release log.
    return subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        check=False,
    )


def last_line(output: str) -> str:
    # The summary a tool ends with ("26 passed", "PASSED", "Successfully built") is the evidence
    # worth keeping in a release log; the rest of a passing hook's output is not.
    plain = _ANSI.sub("", output)  # twine colours its verdict even into a pipe
    lines = [line.strip() for line in plain.splitlines() if line.strip()]
    return f": {lines[-1][:100]}" if lines else ""


def run_hooks(hooks: Sequence[str], places: Places, version: str, readme_line: str | None) -> bool:
    env = hook_env(places)
    for number, template in enumerate(hooks, 1):
        command = expand(template, values_for(places, version, artifacts=True), readme_line)
        print(f"hook {number}/{len(hooks)}: {command}", flush=True)
        unfilled = _PLACEHOLDER.search(command)
        if unfilled:
            print(f"hook {number} failed: no single file in {places.dist} for {unfilled.group(0)}")
            return False
        started = time.monotonic()
        result = run_hook(command, env)
        if result.returncode != 0:
            print(result.stdout, end="" if result.stdout.endswith("\n") else "\n")
            print(f"hook {number} failed (exit {result.returncode}): {command}")
            return False
        print(f"  ok ({time.monotonic() - started:.1f} s){last_line(result.stdout)}", flush=True)
    return True


# --- git ------------------------------------------------------------------------------------------


def git(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ROOT, input=stdin, text=True, capture_output=True, check=False)


def tree_changes() -> list[str]:
    return [line[3:] for line in git("status", "--porcelain", "--untracked-files=all").stdout.splitlines()]


def tag_exists(tag: str) -> bool:
    return git("rev-parse", "-q", "--verify", f"refs/tags/{tag}").returncode == 0


# --- checks ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sources:
    changelog: str
    version_file: str
    readme: str


# (status, message); status is OK, WARN (reported, not in the way) or FAIL (refused).
Check = tuple[str, str]
OK, WARN, FAIL = "ok", "warn", "FAIL"


def read_sources() -> Sources:
    texts = []
    for name in (CHANGELOG, VERSION_FILE, README):
        try:
            texts.append((ROOT / name).read_bytes().decode("utf-8"))
        except OSError as exc:
            raise Refused(f"cannot read {name}: {exc.strerror}") from None
    return Sources(*texts)


def check_repository() -> None:
    top = git("rev-parse", "--show-toplevel")
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != ROOT:
        raise Refused(f"{ROOT} is not the top of a git repository")


def check_version(version: str, sources: Sources) -> Check:
    key = version_key(version)
    if key is None:
        return FAIL, f"{version!r} is not a version X.Y.Z (or a pre-release X.Y.ZaN / bN / rcN)"
    lines = sources.changelog.splitlines(keepends=True)
    known = [(v, CHANGELOG) for v, _ in released_sections(lines)]
    initial = current_version(sources.version_file)
    if initial is None or version_key(initial) is None:
        return FAIL, f'no __version__ = "X.Y.Z" line in {VERSION_FILE}'
    newest, where = max([*known, (initial, VERSION_FILE)], key=lambda pair: version_key(pair[0]) or ())
    if key <= (version_key(newest) or ()):
        return FAIL, f"{version} is not above {newest}, the newest version (in {where})"
    return OK, f"{version} follows {newest} (the newest of {CHANGELOG} and __version__)"


def check_clean() -> Check:
    changes = tree_changes()
    if changes:
        shown = ", ".join(changes[:5]) + (", ..." if len(changes) > 5 else "")
        return FAIL, f"the working tree is not clean ({shown}): commit or stash first"
    return OK, "working tree clean"


def check_tag(version: str) -> Check:
    if tag_exists(f"v{version}"):
        return FAIL, f"tag v{version} already exists"
    return OK, f"tag v{version} is free"


def check_unreleased(sources: Sources) -> Check:
    lines = sources.changelog.splitlines(keepends=True)
    section = unreleased_section(lines)
    if section is None:
        return FAIL, f"{CHANGELOG} has no '## Unreleased' section"
    items = entries(section_body(lines, section))
    if not items:
        return FAIL, f"'## Unreleased' in {CHANGELOG} has no entries: nothing to release"
    bad = malformed_credits(items)
    if bad:
        return FAIL, f"credit not in the form '(thanks @name, #123)' at the end of: {bad[0][:90]}"
    thanks = thanks_line(credits(items))
    return OK, f"'## Unreleased' has {len(items)} entries; credits: {thanks or 'none'}"


def check_hooks(commands: Sequence[str], env_path: str, will_run: bool) -> list[Check]:
    # A plain dry run runs no hook, so a missing program is news for it, not a reason to stop.
    status = FAIL if will_run else WARN
    whys = [(n, missing_tool(command, env_path)) for n, command in enumerate(commands, 1)]
    problems = [(status, f"hook {n}: {why}") for n, why in whys if why]
    return problems or [(OK, f"the programs of the {len(commands)} hooks are installed")]


# --- the plan -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    version: str
    date: str
    edits: dict[str, tuple[str, str]]  # file -> (before, after)
    hooks: list[str]
    hooks_source: str
    readme_line: str | None

    @property
    def tag(self) -> str:
        return f"v{self.version}"

    @property
    def notes(self) -> str:
        return release_notes(self.edits[CHANGELOG][1], self.version) or ""


def make_plan(args: argparse.Namespace, sources: Sources, hooks: list[str], source: str) -> Plan:
    readme_line = readme_install_line(sources.readme) if any("{readme_line}" in h for h in hooks) else None
    edits = {
        CHANGELOG: (sources.changelog, released_changelog(sources.changelog, args.version, args.date)),
        VERSION_FILE: (sources.version_file, with_version(sources.version_file, args.version)),
    }
    return Plan(args.version, args.date, edits, hooks, source, readme_line)


def survey(args: argparse.Namespace) -> tuple[Plan | None, list[Check]]:
    check_repository()
    sources = read_sources()
    hooks, source = load_hooks(args.hooks)
    checks = [check_version(args.version, sources), check_clean(), check_tag(args.version)]
    checks.append(check_unreleased(sources))
    if failed(checks):
        return None, checks
    try:
        plan = make_plan(args, sources, hooks, source)
    except Refused as exc:
        return None, [*checks, (FAIL, str(exc))]
    shown = display_hooks(plan, check_mode=args.check)
    path = hook_env(display_places(plan, args.check))["PATH"]
    checks += check_hooks(shown, path, will_run=args.check or not args.dry_run)
    return plan, checks


def display_places(plan: Plan, check_mode: bool) -> Places:
    tmp = Path("TMP")
    dist = tmp / "dist" if check_mode else Path("dist") / plan.version
    return Places(dist=dist, venv=tmp / "venv", state=tmp / "state")


def display_hooks(plan: Plan, check_mode: bool) -> list[str]:
    values = values_for(display_places(plan, check_mode), plan.version, artifacts=False)
    return [expand(hook, values, plan.readme_line) for hook in plan.hooks]


# --- output ---------------------------------------------------------------------------------------


def show_checks(checks: Sequence[Check]) -> None:
    print("checks")
    for status, message in checks:
        print(f"  {status:<4}  {message}")


def failed(checks: Sequence[Check]) -> int:
    return sum(status == FAIL for status, _ in checks)


def show_steps(plan: Plan, args: argparse.Namespace) -> None:
    before = current_version(plan.edits[VERSION_FILE][0])
    hooks = display_hooks(plan, args.check)
    print("steps")
    print(f"  1. {CHANGELOG}: '## Unreleased' becomes '## [{plan.version}] - {plan.date}', with a new empty")
    print("     '## Unreleased' above it and the thanks line (if any) under the new heading")
    print(f'  2. {VERSION_FILE}: __version__ "{before}" -> "{plan.version}"')
    print(f"  3. run {plan.hooks_source} on the edited files, in order; the first failure stops the")
    print("     release and restores both files exactly:")
    for number, hook in enumerate(hooks, 1):
        print(f"       {number}) {hook}")
    if not hooks:
        print("       (none)")
    if any("{wheel}" in hook or "TMP/" in hook for hook in hooks):
        print("     {wheel}: the wheel the build writes there; TMP: a temporary folder removed afterwards")
    print(f'  4. git commit -m "release {plan.version}" -- {" ".join(plan.edits)}')
    print(f"  5. git tag -a {plan.tag}, its message the {plan.version} notes")
    print("  never: git push, twine upload (docs/releasing.md has the commands)")


def show_diff(plan: Plan) -> None:
    print("changes")
    for name, (before, after) in plan.edits.items():
        diff = difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{name}", f"b/{name}"
        )
        sys.stdout.writelines(diff)
    sys.stdout.flush()


# --- doing it -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Original:
    path: Path
    data: bytes
    times: tuple[int, int]


def write_edits(edits: dict[str, tuple[str, str]], saved: list[Original]) -> None:
    # Each original is saved before its file is touched, so an interruption restores what changed.
    for name, (_, after) in edits.items():
        path = ROOT / name
        stat = path.stat()
        saved.append(Original(path, path.read_bytes(), (stat.st_atime_ns, stat.st_mtime_ns)))
        path.write_bytes(after.encode("utf-8"))


def restore(saved: Sequence[Original]) -> None:
    # Times too: git and build tools then see the files as never touched.
    for original in reversed(saved):
        original.path.write_bytes(original.data)
        os.utime(original.path, ns=original.times)


def only_release_files_changed(plan: Plan) -> bool:
    others = sorted(set(tree_changes()) - set(plan.edits))
    if others:
        print(f"the hooks changed files the release does not own: {', '.join(others)}")
        print("not committing; those files are left as the hooks made them")
    return not others


def commit(plan: Plan) -> bool:
    # A pathspec commits exactly these files and leaves the index alone if it fails.
    result = git("commit", "-q", "-m", f"release {plan.version}", "--", *plan.edits)
    if result.returncode != 0:
        print(f"git commit failed:\n{result.stdout}{result.stderr}")
    return result.returncode == 0


def tag(plan: Plan) -> bool:
    # The default cleanup would strip the "## " and "### " lines of the notes as comments.
    result = git("tag", "-a", plan.tag, "--cleanup=whitespace", "-F", "-", stdin=plan.notes)
    if result.returncode != 0:
        print(f"git tag failed:\n{result.stdout}{result.stderr}")
        print(f"the commit 'release {plan.version}' is made; tag it by hand (docs/releasing.md)")
    return result.returncode == 0


def remove_dist(dist: Path) -> None:
    shutil.rmtree(dist, ignore_errors=True)
    with suppress(OSError):
        dist.parent.rmdir()  # only when empty: dist/ may hold other releases


@contextmanager
def scratch() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rel-tansaku-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def apply(plan: Plan, places: Places, dry_run: bool) -> int:
    saved: list[Original] = []
    committed = False
    try:
        write_edits(plan.edits, saved)
        print("running the hooks on the edited files", flush=True)
        passed = run_hooks(plan.hooks, places, plan.version, plan.readme_line)
        if not (passed and only_release_files_changed(plan)):
            print("release stopped: both files restored, nothing committed or tagged")
            return EXIT_HOOK_FAILED
        if dry_run:
            print("dry run: the hooks passed; both files restored, nothing changed")
            return 0
        committed = commit(plan)
        if not committed:
            return EXIT_GIT_FAILED
    finally:
        if not committed:
            restore(saved)
    return 0 if tag(plan) else EXIT_GIT_FAILED


def show_done(plan: Plan, dist: Path) -> None:
    head = git("rev-parse", "--short", "HEAD").stdout.strip()
    branch = git("rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    print(f"released {plan.version}: commit {head} 'release {plan.version}', annotated tag {plan.tag}")
    artifacts = sorted(dist.glob("*")) if dist.is_dir() else []
    for artifact in artifacts:
        print(f"  {artifact.relative_to(ROOT)}")
    print("nothing was pushed or uploaded; when ready:")
    print(f"  git push origin {branch} {plan.tag}")
    if artifacts:
        print(f"  twine upload {dist.relative_to(ROOT)}/*")


def cmd_release(args: argparse.Namespace) -> int:
    plan, checks = survey(args)
    mode = " (dry run: nothing will change)" if args.dry_run else ""
    print(f"tansaku release {args.version} - {args.date}{mode}")
    show_checks(checks)
    if plan is None or failed(checks):
        print(f"refused: {failed(checks)} check(s) failed", file=sys.stderr)
        return EXIT_REFUSED
    show_steps(plan, args)
    show_diff(plan)
    if args.dry_run and not args.check:
        print("dry run: nothing changed (add --check to run the hooks too)")
        return 0
    with scratch() as tmp:
        dist = tmp / "dist" if args.dry_run else ROOT / "dist" / plan.version
        places = Places(dist=dist, venv=tmp / "venv", state=tmp / "state")
        if not args.dry_run:
            shutil.rmtree(dist, ignore_errors=True)  # left by an earlier attempt at this version
        code = apply(plan, places, args.dry_run)
    if code == EXIT_HOOK_FAILED and not args.dry_run:
        remove_dist(dist)
    if code == 0 and not args.dry_run:
        show_done(plan, dist)
    return code


def cmd_notes(args: argparse.Namespace) -> int:
    if not (_SERIES.fullmatch(args.version) or version_key(args.version)):
        print(f"notes: {args.version!r} is neither X.Y nor a version X.Y.Z", file=sys.stderr)
        return 2
    changelog = read_sources().changelog
    chosen = select_notes(changelog, args.version)
    if not chosen:
        known = ", ".join(v for v, _ in released_sections(changelog.splitlines())) or "none"
        print(f"notes: no release {args.version} in {CHANGELOG} (released: {known})", file=sys.stderr)
        return 1
    print("\n".join(notes for _, notes in chosen), end="")
    return 0


# --- command line ---------------------------------------------------------------------------------


def iso_date(text: str) -> str:
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"not a date YYYY-MM-DD: {text!r}")


def release_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tools/release.py",
        description="Release VERSION from '## Unreleased' in CHANGELOG.md: edit, run the hooks, commit, tag.",
        epilog="'tools/release.py notes X.Y|VERSION' prints released notes. See docs/releasing.md.",
    )
    parser.add_argument("version", metavar="VERSION", help="X.Y.Z, or a pre-release X.Y.ZaN / bN / rcN")
    parser.add_argument("--dry-run", action="store_true", help="print the steps, the diff and the hooks")
    parser.add_argument("--check", action="store_true", help="with --dry-run: also run the hooks")
    today = datetime.date.today().isoformat()
    parser.add_argument("--date", type=iso_date, default=today, help="the release date (default today)")
    parser.add_argument("--hooks", type=Path, metavar="FILE", help="hooks to run instead of the defaults")
    return parser


def notes_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tools/release.py notes", description="Print released notes.")
    parser.add_argument("version", metavar="X.Y|VERSION", help="a series (every X.Y.*) or one version")
    return parser


def _terminate(signum: int, _frame: object) -> None:
    # SystemExit unwinds through the finally that restores the edited files.
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["notes"]:
            return cmd_notes(notes_parser().parse_args(argv[1:]))
        args = release_parser().parse_args(argv)
        if args.check and not args.dry_run:
            release_parser().error("--check goes with --dry-run (a real release always runs the hooks)")
        signal.signal(signal.SIGTERM, _terminate)
        return cmd_release(args)
    except Refused as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        print("interrupted: nothing committed or tagged, edited files restored", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
