"""Front-matter fields (issue 27): parsed once at update, filtered on with ``--where``, shown with
``--fields``.

- ``frontmatter``: YAML (``---``) and TOML (``+++``) front matter of a Markdown file -> fields.
- ``where``: the ``--where`` expressions -> conditions (bad syntax is a usage error).
- ``lookup``: the searches' document filter and the fields of the documents a search returns.
- ``scope``: what ``--where`` and ``--fields`` change about a search (imports ``lookup`` only then).
The SQL of both lives in ``store/fields.py``.
"""
