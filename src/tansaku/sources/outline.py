"""What a document defines: its headings, the names it documents, the command-line options it lists.

Keyword search weighs these above the body: a page that defines ``join()`` under the module
heading ``os.path`` should outrank one that mentions ``os.path.join`` in passing. The scan is a
handful of line regexes over the whole text (no parser), because it runs on every indexed file:

- headings: Markdown ``#`` lines, titles underlined with a run of one punctuation character
  (Markdown setext and reStructuredText), the ``NAME`` line of a man page and the upper-case
  tags of its paragraphs and tables (``SIGHUP``, ``CAP_NET_BIND_SERVICE``, ``LANG``);
- definitions: reST/Sphinx directives (``.. function:: join(path, *paths)``, ``.. envvar::``,
  ``.. c:function::``), and in code files ``def``, ``class``, ``function``, ``fn``, ``func``,
  ``#define`` and upper-case module constants;
- options: option names at the start of a line (man pages' ``-a, --all``, ``-mtime n``), in
  ``.. cmdoption::``/``.. option::`` directives, and Markdown headings that are a ``--flag``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Files whose definitions are code lines; their "#" lines are comments, not headings.
_CODE_SUFFIX_TEXT = ".py .pyi .js .mjs .cjs .jsx .ts .tsx .go .rs .java .c .h .cc .cpp .hpp .cxx .rb .sh .zsh"
CODE_SUFFIXES = frozenset(_CODE_SUFFIX_TEXT.split())

# Every pattern starts with a literal "\n" (the text is scanned with one prepended), so the regex
# engine jumps from line to line instead of trying each position: 5-10x faster than ``^`` + re.M.
_ATX = re.compile(r"\n[ ]{0,3}#{1,6}[ \t]+([^\n]+?)[ \t#]*(?=\n)")
_ADORNMENT = re.compile(r"\n([=\-~^\"'`*+#:.])\1{2,}[ \t]*(?=\n)")
_DIRECTIVE = re.compile(
    r"\n([ \t]*)\.\.[ \t]+(?:[a-z]+:)?(function|method|class|module|currentmodule|data|attribute"
    r"|exception|envvar|describe|decorator|decoratormethod|classmethod|staticmethod|abstractmethod"
    r"|coroutinefunction|coroutinemethod|awaitablefunction|awaitablemethod|opcode|macro|type|member|var"
    r"|struct|pdbcommand|property|object|fixer"
    r"|cmdoption|option)::[ \t]*([^\n]+)"
)
# A line that starts with an option name: "       -a, --all", "-mtime n", "--block-size=SIZE".
_OPTION_LINE = re.compile(
    r"\n[ \t]{0,14}(-{1,2}[A-Za-z0-9?][\w-]*(?:[ \t]*,[ \t]*-{1,2}[A-Za-z0-9?][\w-]*)*)"
)
_OPTION_NAME = re.compile(r"-{1,2}([A-Za-z0-9?][\w-]*)")
_MAN_NAME = re.compile(r"\nNAME[ \t]*\n[ \t]+([^\n]+)")
# A man page's tagged paragraph or table row whose tag is an upper-case name, at the page's
# first indent: "       CAP_NET_BIND_SERVICE" over its description, "       SIGHUP   P1990   Term",
# "       LANG", "       EACCES". The names a man page documents besides its options.
_MAN_TAG_INDENT = 7
_MAN_TAG = re.compile(rf"[ ]{{{_MAN_TAG_INDENT}}}([A-Z][A-Z0-9_]{{2,}})(?:[ \t]*|[ \t]{{2,}}\S.*)")
_CODE_DEFINITIONS = re.compile(
    r"\n[ \t]*(?:export[ \t]+)?(?:default[ \t]+)?(?:pub(?:\([\w ]+\))?[ \t]+)?(?:async[ \t]+)?"
    r"(?:def|class|function\*?|fn|struct|enum|trait|interface|type)[ \t]+([A-Za-z_$][\w$]*)"
    r"|\nfunc[ \t]+(?:\([^)\n]*\)[ \t]*)?([A-Za-z_]\w*)"
    r"|\n#[ \t]*define[ \t]+([A-Za-z_]\w*)"
    r"|\n([A-Z][A-Z0-9_]{2,})[ \t]*(?::[^=\n]*)?="
)
_INLINE_MARKUP = re.compile(r"[`*]|:[a-z:]+:(?=`)")


@dataclass(frozen=True)
class Outline:
    headings: str  # one heading or defined name a line
    options: str  # one option name a line, without its dashes


def _suffix(rel_path: str) -> str:
    name = rel_path.rsplit("/", 1)[-1].lower()
    return "." + name.rsplit(".", 1)[-1] if "." in name else ""


# A C function pointer type: "int (*visitproc)(PyObject *object, void *arg)" names visitproc.
_POINTER_NAME = re.compile(r"[^(]*\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(")


def _defined_name(argument: str) -> str:
    """``join(path, *paths)`` -> ``join``; ``PyObject* PyArg_ParseTuple(...)`` -> ``PyArg_ParseTuple``;
    ``int (*visitproc)(PyObject *, void *)`` -> ``visitproc`` (not its return type)."""
    pointer = _POINTER_NAME.match(argument)
    if pointer:
        return pointer.group(1)
    head = argument.split("(", 1)[0].strip()
    words = head.replace("*", " ").split()
    return words[-1] if words else ""


def _options_in(text: str) -> list[str]:
    return [name.group(1) for name in _OPTION_NAME.finditer(text)]


def _underlined(text: str) -> list[str]:
    """Titles underlined with a run of one punctuation character: the line above the run."""
    titles = []
    for match in _ADORNMENT.finditer(text):
        end = match.start()
        start = text.rfind("\n", 0, end) + 1
        title = text[start:end]
        if title.strip() and not title[:1].isspace() and not _ADORNMENT.fullmatch("\n" + title):
            titles.append(title.strip())
    return titles


def _documented_names(text: str, options: list[str]) -> list[str]:
    """Names that Sphinx directives document, qualified the way users type them: a function
    under ``.. module:: os.path`` is ``os.path.join``, a method inside ``.. class:: Path`` is
    ``Path.read_text``. The bare name is kept too (the parts are searched either way, but the
    qualified form is the phrase an exact lookup matches)."""
    names: list[str] = []
    module = ""
    classes: list[tuple[int, str]] = []  # (indent, class name) of the enclosing class directives
    for match in _DIRECTIVE.finditer(text):
        indent, kind, argument = len(match.group(1).expandtabs()), match.group(2), match.group(3)
        if kind in ("cmdoption", "option"):
            options.extend(_options_in(argument))
            continue
        name = _defined_name(argument)
        if not name:
            continue
        if kind in ("module", "currentmodule"):
            module = name if name != "None" else ""
            if kind == "module":
                names.append(name)
            continue
        while classes and classes[-1][0] >= indent:
            classes.pop()
        qualified = f"{classes[-1][1]}.{name}" if classes and "." not in name else name
        if module and not qualified.startswith(module + "."):
            qualified = f"{module}.{qualified}"
        names.append(qualified)
        if kind in ("class", "exception"):
            classes.append((indent, name.rsplit(".", 1)[-1]))
    return names


def _code_names(text: str) -> list[str]:
    """Defined names in code, methods also as ``Class.method``."""
    names: list[str] = []
    classes: list[tuple[int, str]] = []
    for match in _CODE_DEFINITIONS.finditer(text):
        name = next(group for group in match.groups() if group)
        indent = len(text[match.start() + 1 : match.end()]) - len(
            text[match.start() + 1 : match.end()].lstrip()
        )
        while classes and classes[-1][0] >= indent:
            classes.pop()
        names.append(name)
        if classes:
            names.append(f"{classes[-1][1]}.{name}")
        if match.group(0).lstrip().split()[0] in ("class", "struct", "interface", "trait"):
            classes.append((indent, name))
    return names


def _man_tags(text: str) -> list[str]:
    """The upper-case tags of a man page's paragraphs and tables (``_MAN_TAG``) that start one:
    after a blank line, a table's rule, another tag or the indented description of one; not in
    justified prose ("       CAP_NET_BIND_SERVICE  capability  in  the  user namespace" in ip(7)
    continues a sentence)."""
    tags: list[str] = []
    opens = True
    for line in text.splitlines():
        match = _MAN_TAG.fullmatch(line)
        if match is not None and opens:
            tags.append(match.group(1))
        indent = len(line) - len(line.lstrip(" "))
        rule = not line.strip(" ─-=+")  # a blank line, or a table's rule under its header
        opens = rule or match is not None or indent > _MAN_TAG_INDENT
    return tags


def outline(text: str, rel_path: str) -> Outline:
    text = "\n" + text + "\n"
    headings: list[str] = []
    options: list[str] = []
    if _suffix(rel_path) in CODE_SUFFIXES:
        return Outline("\n".join(_code_names(text)), "")
    for match in _ATX.finditer(text):
        heading = _INLINE_MARKUP.sub("", match.group(1)).strip()
        headings.append(heading)
        if heading.startswith("-"):
            options.extend(_options_in(heading.split()[0]))
    headings.extend(_underlined(text))
    man_names = [match.group(1).strip() for match in _MAN_NAME.finditer(text)]
    headings.extend(man_names)
    if man_names:
        headings.extend(dict.fromkeys(_man_tags(text)))
    headings.extend(_documented_names(text, options))
    for match in _OPTION_LINE.finditer(text):
        options.extend(_options_in(match.group(1)))
    return Outline("\n".join(headings), "\n".join(dict.fromkeys(options)))
