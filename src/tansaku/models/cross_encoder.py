"""Cross-encoder reranking through llama.cpp's rank pooling, and the choice of reranker for a file.

A cross-encoder (BERT/XLM-R family, ``<arch>.pooling_type = 4`` in GGUF) reads the query and the
document together and its classification head gives one relevance logit per pair; llama.cpp hands
that head's output back as the sequence "embedding". It is an order of magnitude cheaper than
asking a causal LM for yes/no (``LlamaYesNoScorer``), which ``open_reranker`` falls back to for
files without rank pooling. llama_cpp is imported when a model is opened, as in ``llama.py``.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

from .gguf import cached_gguf_metadata, file_sha256
from .lifetime import ClosableModel
from .llama import (
    LOG_SINK,
    OPEN_MODELS,
    POOLING_NAMES,
    POOLING_RANK,
    Threads,
    decode_sequences,
    import_llama_cpp,
    open_llama,
)
from .llama_causal import LlamaYesNoScorer

__all__ = ["RERANK_WINDOW", "LlamaCrossEncoder", "Reranker", "open_reranker"]

# Cross-encoders are trained and used with pairs of at most 512 tokens (sentence-transformers'
# CrossEncoder and FlagEmbedding default to it, even for models whose positions reach 8192), and
# a longer window costs quadratic attention time for each candidate.
RERANK_WINDOW = 512

# Architectures whose rank head ends in a softmax inside llama.cpp's graph (Qwen3 rerankers score
# "yes" against "no"): their first output is already a probability, not a logit.
_SOFTMAX_HEADS = frozenset({"qwen3", "qwen3vl"})

_PLACEHOLDERS = re.compile(r"(\{query\}|\{document\})")


class LlamaCrossEncoder(ClosableModel):
    """Relevance in 0..1 of a (query, document) pair from a GGUF cross-encoder (rank pooling).

    The pair input is built as llama.cpp's server builds it for ``/rerank``: the file's
    ``rerank`` template when it has one, else ``[BOS] query [EOS] [SEP] document [EOS]`` with each
    special token only where the vocabulary says to add it (for BERT: ``[CLS] query [SEP]
    document [SEP]``; for XLM-R: ``<s> query </s></s> document </s>``). A document too long for
    the window is cut at the token level; the query never is. Not thread-safe.

    ``n_threads``: llama.cpp's threads; None chooses them before each decode from the machine's
    load. Raises FileNotFoundError for a missing file, ValueError for a file that is not a
    rank-pooling GGUF model, ImportError when llama-cpp-python is not installed.
    """

    prompt_version = 1

    def __init__(self, path: str | Path, *, n_threads: int | None = None, verbose: bool = False) -> None:
        llama_cpp = import_llama_cpp()
        self._llama_cpp = llama_cpp
        self._path = str(path)
        meta = cached_gguf_metadata(self._path)
        self._family = str(meta.get("general.architecture", ""))
        if not self._family:
            raise ValueError(f"{self._path}: GGUF file has no general.architecture")
        pooling = meta.get(f"{self._family}.pooling_type")
        if pooling != POOLING_RANK:
            kind = POOLING_NAMES.get(pooling, "no") if isinstance(pooling, int) else "no"
            raise ValueError(f"{self._path} is not a cross-encoder: it has {kind} pooling, not rank")
        trained = meta.get(f"{self._family}.context_length")
        if not isinstance(trained, int) or trained <= 0:
            raise ValueError(f"{self._path}: GGUF file has no {self._family}.context_length")

        self._n_ctx = min(trained, RERANK_WINDOW)
        self._threads = Threads(llama_cpp, n_threads)
        LOG_SINK.echo = verbose
        started = time.perf_counter()
        self._llm = open_llama(
            llama_cpp,
            self._path,
            embedding=True,
            # Explicit, although the file says so too: only rank pooling runs the head.
            pooling_type=POOLING_RANK,
            n_ctx=self._n_ctx,
            # A pair must fit in one micro-batch (non-causal attention sees all of it).
            n_batch=self._n_ctx,
            n_ubatch=self._n_ctx,
            n_threads=self._threads.current,
            n_threads_batch=self._threads.current,
            # Off, unlike the embedder: llama.cpp's CPU flash attention rounds K and V to f16
            # and takes another path for a larger batch, so a pair's score moved by ~5e-4 with
            # what it was packed with (measured on MiniLM); plain attention keeps it within
            # ~4e-5 for f32 weights, and cost no measurable speed on BERT-size pairs.
            flash_attn=False,
            verbose=verbose,
        )
        self.load_seconds = time.perf_counter() - started
        self._closed = False
        model = self._llm.model
        vocab = llama_cpp.llama_model_get_vocab(model)
        self._n_outputs = max(1, int(llama_cpp.llama_model_n_cls_out(model)))
        self._softmax_head = self._family in _SOFTMAX_HEADS
        template = llama_cpp.llama_model_chat_template(model, b"rerank")
        self._template = template.decode("utf-8") if template else None

        def special(add: bool, token: int) -> list[int]:
            return [int(token)] if add and token != llama_cpp.LLAMA_TOKEN_NULL else []

        eos = llama_cpp.llama_vocab_eos(vocab)
        if eos == llama_cpp.LLAMA_TOKEN_NULL:
            eos = llama_cpp.llama_vocab_sep(vocab)  # as llama.cpp does: BERT vocabularies may lack EOS
        add_eos = bool(llama_cpp.llama_vocab_get_add_eos(vocab))
        self._bos = special(bool(llama_cpp.llama_vocab_get_add_bos(vocab)), llama_cpp.llama_vocab_bos(vocab))
        self._middle = special(add_eos, eos) + special(
            bool(llama_cpp.llama_vocab_get_add_sep(vocab)), llama_cpp.llama_vocab_sep(vocab)
        )
        self._end = special(add_eos, eos)
        self._n_seq_max = min(self._n_ctx, int(llama_cpp.llama_max_parallel_sequences()))
        self._batch = llama_cpp.llama_batch_init(self._n_ctx, 0, 1)
        self.last_prompt_tokens = 0  # tokens decoded by the latest score/score_batch, for tokens/s
        OPEN_MODELS.add(self)

    # -- facts about the model -------------------------------------------------------------

    @property
    def path(self) -> str:
        return self._path

    @property
    def model_family(self) -> str:
        """The GGUF ``general.architecture``, e.g. ``bert``."""
        return self._family

    @property
    def context_tokens(self) -> int:
        """The most tokens one pair (with its special tokens) may have."""
        return self._n_ctx

    @cached_property
    def model_sha256(self) -> str:
        return file_sha256(self._path)

    @property
    def threads(self) -> int:
        """The threads llama.cpp's context holds now (those of the latest decode)."""
        self._check_open()
        return int(self._llama_cpp.llama_n_threads_batch(self._llm.ctx))

    # -- tokens ----------------------------------------------------------------------------

    def _tokenize(self, text: str, *, special: bool = False) -> list[int]:
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=special))

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` alone, without the special tokens of a pair."""
        self._check_open()
        return len(self._tokenize(text))

    def unreadable_share(self, text: str) -> float:
        """The share of ``text``'s tokens the model cannot read (models/languages.py): an English
        cross-encoder reads a Chinese query as unknown or foreign tokens, and its scores for it
        are noise."""
        from .languages import unreadable_share

        self._check_open()
        return unreadable_share(
            self._tokenize(text),
            self._llm.metadata.get("tokenizer.ggml.unknown_token_id"),
            cached_gguf_metadata(self._path).get("general.languages"),
            lambda token: bytes(self._llm.detokenize([token])).decode("utf-8", "ignore"),
        )

    def pair_tokens(self, query: str, document: str) -> list[int]:
        """The tokens scored for the pair: the document cut to fit the window, never the query.

        Raises ValueError when the query alone leaves no room for a document token.
        """
        self._check_open()
        if self._template is None:
            head = [*self._bos, *self._tokenize(query), *self._middle]
            tail = list(self._end)
            document_tokens = self._tokenize(document)
        else:
            head, tail, document_tokens = self._template_parts(self._template, query, document)
        room = self._n_ctx - len(head) - len(tail)
        if room < 1:
            raise ValueError(f"the query is too long for the reranker's window of {self._n_ctx} tokens")
        return head + document_tokens[:room] + tail

    def _template_parts(
        self, template: str, query: str, document: str
    ) -> tuple[list[int], list[int], list[int]]:
        """(tokens before the document, after it, the document's) for a ``rerank`` template.

        llama.cpp fills the template and tokenizes it whole with special tokens parsed; here only
        the template's own text is parsed for them, so a query or document that spells a special
        token cannot forge one, and the document is tokenized apart so that it can be cut.
        """
        before: list[int] = []
        after: list[int] = []
        document_tokens: list[int] = []
        seen_document = False
        for piece in _PLACEHOLDERS.split(template):
            if piece == "{document}":
                document_tokens = self._tokenize(document)
                seen_document = True
                continue
            tokens = self._tokenize(query) if piece == "{query}" else self._tokenize(piece, special=True)
            (after if seen_document else before).extend(tokens)
        return before, after, document_tokens

    # -- scoring ---------------------------------------------------------------------------

    def score(self, query: str, document: str) -> float:
        """The pair's relevance in [0, 1]: the sigmoid of the head's logit."""
        tokens = self.pair_tokens(query, document)
        (score,) = self._decode([tokens])
        self.last_prompt_tokens = len(tokens)
        return score

    def score_batch(self, query: str, documents: Sequence[str]) -> list[float]:
        """``score`` of each document, in order, packing as many pairs as fit into each decode.

        Each pair is its own sequence in the batch, so attention never crosses pairs; the scores
        match one-by-one scoring up to rounding (llama.cpp's kernels round differently with a
        pair's place in the batch, by far less than 1e-4).
        """
        if isinstance(documents, str):
            raise TypeError("score_batch takes a sequence of documents: wrap a single one in a list")
        encoded = [self.pair_tokens(query, document) for document in documents]
        scores: list[float] = []
        group: list[list[int]] = []
        used = 0
        for tokens in encoded:
            if group and (used + len(tokens) > self._n_ctx or len(group) >= self._n_seq_max):
                scores.extend(self._decode(group))
                group, used = [], 0
            group.append(tokens)
            used += len(tokens)
        if group:
            scores.extend(self._decode(group))
        self.last_prompt_tokens = sum(len(tokens) for tokens in encoded)
        return scores

    def _decode(self, group: list[list[int]]) -> list[float]:
        self._check_open()
        lc = self._llama_cpp
        decode_sequences(lc, self._llm.ctx, self._batch, group, self._threads, "score a batch")
        scores = []
        for seq in range(len(group)):
            pointer = lc.llama_get_embeddings_seq(self._llm.ctx, seq)
            if not pointer:
                raise RuntimeError("llama.cpp returned no rank output")
            value = float(pointer[0])
            scores.append(value if self._softmax_head else _sigmoid(value))
        return scores

    # -- lifetime --------------------------------------------------------------------------

    closed_message = "the reranker is closed"

    def _release(self) -> None:
        self._llama_cpp.llama_batch_free(self._batch)
        self._llm.close()


def _sigmoid(logit: float) -> float:
    # Written for both signs so that a large |logit| never overflows math.exp.
    if logit >= 0:
        return 1.0 / (1.0 + math.exp(-logit))
    z = math.exp(logit)
    return z / (1.0 + z)


Reranker = LlamaCrossEncoder | LlamaYesNoScorer


def is_cross_encoder(path: str | Path) -> bool:
    """Whether the GGUF file is a rank-pooling cross-encoder (its header only, read once; no load)."""
    meta = cached_gguf_metadata(path)
    family = str(meta.get("general.architecture", ""))
    return bool(family) and meta.get(f"{family}.pooling_type") == POOLING_RANK


def open_reranker(path: str | Path, *, n_threads: int | None = None) -> Reranker:
    """The reranker a GGUF file makes, chosen from its header (llama.cpp loads it only once chosen).

    Rank pooling gives a ``LlamaCrossEncoder``; a causal LM gives a ``LlamaYesNoScorer``. An
    embedding model (mean, CLS or last-token pooling, or an encoder without a head) raises
    ValueError: it has no way to judge a pair.
    """
    path = Path(path)
    meta = cached_gguf_metadata(path)
    family = str(meta.get("general.architecture", ""))
    if not family:
        raise ValueError(f"{path}: GGUF file has no general.architecture")
    pooling = meta.get(f"{family}.pooling_type")
    if pooling == POOLING_RANK:
        return LlamaCrossEncoder(path, n_threads=n_threads)
    if isinstance(pooling, int) and pooling in POOLING_NAMES and pooling != 0:
        raise ValueError(
            f"{path} is an embedding model ({POOLING_NAMES[pooling]} pooling), not a reranker: use a "
            "cross-encoder (rank pooling) or a text generation model"
        )
    if meta.get(f"{family}.attention.causal") is False:
        raise ValueError(
            f"{path} is an encoder without a classification head (no rank pooling), not a reranker"
        )
    return LlamaYesNoScorer(path, n_threads=n_threads)
