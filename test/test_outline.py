"""What a document defines, as indexed into the headings and options columns."""

from __future__ import annotations

from tansaku.sources.outline import outline


def test_sphinx_names_are_qualified_by_module_and_class() -> None:
    text = """os.path
=======

.. module:: os.path

.. function:: join(path, *paths)

.. class:: Finder(root)

   .. method:: find(pattern)

.. c:function:: PyObject* PyArg_ParseTuple(PyObject *args, const char *format, ...)

.. envvar:: PYTHONHASHSEED

.. cmdoption:: -X importtime, --check-hash-based-pycs
"""
    defined = outline(text, "library/os.path.rst.txt")
    assert defined.headings.splitlines() == [
        "os.path",
        "os.path",
        "os.path.join",
        "os.path.Finder",
        "os.path.Finder.find",
        "os.path.PyArg_ParseTuple",
        "os.path.PYTHONHASHSEED",
    ]
    assert defined.options.splitlines() == ["X", "check-hash-based-pycs"]


def test_a_c_function_pointer_type_defines_its_name_not_its_return_type() -> None:
    text = """.. c:type:: int (*visitproc)(PyObject *object, void *arg)

.. c:type:: PyObject *(*reprfunc)(PyObject *)

.. c:function:: int Py_Main(int argc, wchar_t **argv)
"""
    assert outline(text, "c-api/gcsupport.rst.txt").headings.splitlines() == [
        "visitproc",
        "reprfunc",
        "Py_Main",
    ]


def test_awaitable_functions_and_methods_define_their_names() -> None:
    text = """.. currentmodule:: asyncio

.. awaitablefunction:: gather(*aws, return_exceptions=False)

.. awaitablemethod:: loop.run_in_executor(executor, func, *args)
"""
    assert outline(text, "library/asyncio-task.rst.txt").headings.splitlines() == [
        "asyncio.gather",
        "asyncio.loop.run_in_executor",
    ]


def test_markdown_headings_and_flag_headings() -> None:
    text = "# npm config\n\n#### `save-exact`\n\nSave exact versions.\n\n### `--legacy-peer-deps`\n\n- item\n"
    defined = outline(text, "using-npm/config.md")
    assert defined.headings.splitlines() == ["npm config", "save-exact", "--legacy-peer-deps"]
    assert defined.options.splitlines() == ["legacy-peer-deps"]


def test_man_page_name_line_and_option_list() -> None:
    text = """FIND(1)

NAME
       find - search for files in a directory hierarchy

TESTS
       -mtime n
              File's data was last modified n*24 hours ago.

       -a, --all
              do not ignore entries starting with .
   - not an option, a dash in prose
"""
    defined = outline(text, "man1/find.1.txt")
    assert defined.headings.splitlines() == ["find - search for files in a directory hierarchy"]
    assert defined.options.splitlines() == ["mtime", "a", "all"]


def test_man_page_upper_case_tags_define_names_but_justified_prose_does_not() -> None:
    text = """CAPABILITIES(7)

NAME
       capabilities - overview of Linux capabilities

DESCRIPTION
       Signal      Standard   Action   Comment
       ────────────────────────────────────────
       SIGHUP       P1990      Term    Hangup detected on controlling terminal
       SIGINT       P1990      Term    Interrupt from keyboard

       CAP_NET_BIND_SERVICE
              Bind a socket to Internet domain privileged ports.
       CAP_NET_RAW
              Use RAW and PACKET sockets.

       A process needs the
       CAP_SYS_ADMIN  capability  in  the  user namespace to do this.
"""
    headings = outline(text, "man7/capabilities.7.txt").headings.splitlines()
    assert headings == [
        "capabilities - overview of Linux capabilities",
        "SIGHUP",
        "SIGINT",
        "CAP_NET_BIND_SERVICE",
        "CAP_NET_RAW",
    ]


def test_code_definitions_with_methods_under_their_class() -> None:
    text = '''"""# not a heading"""
MAX_WIDTH = 80


class Context:
    def invoke(self):
        pass


def main():
    pass
'''
    defined = outline(text, "src/click/core.py")
    assert defined.headings.splitlines() == ["MAX_WIDTH", "Context", "invoke", "Context.invoke", "main"]
    assert defined.options == ""


def test_underlines_are_headings_only_under_text() -> None:
    text = "Title\n=====\n\n-----\n\n   indented\n   --------\n"
    assert outline(text, "a.rst").headings.splitlines() == ["Title"]
