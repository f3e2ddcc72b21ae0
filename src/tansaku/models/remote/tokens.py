"""Token counts without the server's tokenizer: an estimate that errs on the high side.

Windows are cut to a token budget before the text is sent; an OpenAI-compatible API has no
tokenizer call, so each word counts one token per four characters (at least one), each other
visible character and each CJK character one. Real tokenizers give fewer for ordinary prose, so a
window estimated to fit does fit.
"""

from __future__ import annotations

import math
import re

_PIECES = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+|[^\w\s]|_", re.UNICODE)


def estimate_tokens(text: str) -> int:
    count = 0
    for piece in _PIECES.findall(text):
        count += max(1, math.ceil(len(piece) / 4)) if piece[0].isalnum() and len(piece) > 1 else 1
    return count
