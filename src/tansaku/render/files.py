"""The "files" format: just enough to feed other tools, one document per line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tansaku import types as _types
from tansaku.render.shared import RenderOptions, citation, show_docid, show_score, shown_path
from tansaku.render.terminal import clean
from tansaku.types import SearchResult

if TYPE_CHECKING:
    from tansaku.types import ContextPack, DocumentSlice, MultiGetResult

# Get and multi-get results are looked up as ``_types.X`` after the search test: tansaku.types
# builds those classes on first look-up, and printing a search result should not.


def render(result: SearchResult | DocumentSlice | MultiGetResult, opts: RenderOptions) -> str:
    # Paths go last so a reader can split on the first commas; control characters (a newline
    # in a file name) are replaced so one document stays one line.
    if isinstance(result, SearchResult):
        lines = [
            f"{show_docid(h.docid)},{show_score(h.score)},{clean(shown_path(h, opts))}" for h in result.hits
        ]
    elif isinstance(result, _types.MultiGetResult):
        lines = [f"{show_docid(d.docid)},{clean(shown_path(d, opts))}" for d in result.documents]
    else:
        lines = [clean(shown_path(result, opts))]
    return "".join(line + "\n" for line in lines)


def render_pack(pack: ContextPack, opts: RenderOptions) -> str:
    # One citation per passage, PATH:START-END, in pack order (an editor or `sed -n` can use it).
    return "".join(clean(citation(item, opts)) + "\n" for item in pack.items)
