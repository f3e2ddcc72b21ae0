"""How much of a text a model can read: its vocabulary, and the languages it declares.

A tokenizer's coverage alone overstates what a model reads. MiniLM's English vocabulary holds
single Han characters, so ``GBK 编码的文本文件怎么转成 UTF-8`` is 35% unknown tokens to it, and
its vectors for the rest are noise all the same: it learnt English. A GGUF file may say which
languages its model learnt (``general.languages``: llama.cpp's converter and `tansaku models
import` copy it from the model card); when it names languages and none of them is written in
Han, kana or Hangul, text in those scripts counts as unreadable too. A file that names none
keeps the vocabulary's word.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

# A text the model reads less of than this share gets noise from it: `query` leaves its vector
# list out and does not ask such a reranker, and `vsearch` says so (QUERY_UNREADABLE).
MIN_READABLE = 0.5
# How warnings and --explain say what an unreadable share counts.
UNREADABLE_TOKENS = "of its tokens are unknown to its vocabulary or in a script its languages leave out"

# Language codes (ISO 639-1 and 639-3, and the model cards' "multilingual") of text in CJK scripts.
CJK_LANGUAGES = frozenset(
    {"zh", "ja", "ko", "yue", "zho", "chi", "cmn", "jpn", "kor", "wuu", "lzh", "multilingual"}
)


def reads_cjk(languages: object) -> bool:
    """False only when ``languages`` (a GGUF ``general.languages`` value) names languages and none
    of them is written in CJK; True when it names one, or names none (nothing is known)."""
    if not isinstance(languages, list | tuple) or not languages:
        return True
    codes = {str(code).strip().lower().replace("_", "-").split("-")[0] for code in languages}
    return bool(codes & CJK_LANGUAGES)


def unreadable_share(
    tokens: Sequence[int],
    unknown_id: object,
    languages: object,
    piece: Callable[[int], str],
) -> float:
    """The share of ``tokens`` the model cannot read: the unknown token, and tokens in a CJK
    script when its languages leave them out (``piece`` gives a token's text)."""
    if not tokens:
        return 0.0
    unknown = int(unknown_id) if isinstance(unknown_id, int | str) and str(unknown_id).isdigit() else None
    skip_cjk = not reads_cjk(languages)
    if skip_cjk:
        from ..text.cjk import has_cjk
    unreadable = 0
    for token in tokens:
        if token == unknown or (skip_cjk and has_cjk(piece(token))):
            unreadable += 1
    return unreadable / len(tokens)
