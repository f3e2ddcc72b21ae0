"""Decoder models through llama.cpp: query expansion (``LlamaGenerator``) and yes/no relevance
scoring (``LlamaYesNoScorer``). The process-wide parts (import, loading lock, threads) are llama.py's.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from .gguf import cached_gguf_metadata, file_sha256
from .lifetime import ClosableModel
from .llama import LOG_SINK, OPEN_MODELS, POOLING_RANK, Threads, import_llama_cpp, open_llama

__all__ = ["GENERATION_WINDOW", "LlamaGenerator", "LlamaYesNoScorer"]

GENERATION_WINDOW = 2048


def _load_causal(path: str, *, n_ctx: int, threads: Threads, verbose: bool) -> tuple[Any, float]:
    """(Llama, load seconds) for a decoder model; errors as for LlamaEmbedder."""
    llama_cpp = import_llama_cpp()
    meta = cached_gguf_metadata(path)
    family = str(meta.get("general.architecture", ""))
    if not family:
        raise ValueError(f"{path}: GGUF file has no general.architecture")
    if meta.get(f"{family}.pooling_type") == POOLING_RANK:
        raise ValueError(f"{path} is a rank-pooling reranker, not a text generation model")
    trained = meta.get(f"{family}.context_length")
    if isinstance(trained, int) and trained > 0:
        n_ctx = min(n_ctx, trained)
    LOG_SINK.echo = verbose
    started = time.perf_counter()
    llm = open_llama(
        llama_cpp,
        path,
        n_ctx=n_ctx,
        n_threads=threads.current,
        n_threads_batch=threads.current,
        # Only the last position's logits are ever read; all-position logits cost memory.
        logits_all=False,
        verbose=verbose,
    )
    return llm, time.perf_counter() - started


class _CausalModel(ClosableModel):
    """Shared lifetime and identity of the generator and the scorer."""

    _llm: Any
    _path: str
    _closed: bool
    _threads: Threads

    def _load(self, path: str | Path, n_ctx: int, n_threads: int | None, verbose: bool) -> None:
        self._path = str(path)
        self._llama_cpp = import_llama_cpp()
        self._threads = Threads(self._llama_cpp, n_threads)
        self._llm, self.load_seconds = _load_causal(
            self._path, n_ctx=n_ctx, threads=self._threads, verbose=verbose
        )
        self._closed = False
        OPEN_MODELS.add(self)

    @property
    def thread_setting(self) -> int | None:
        """The fixed thread count, or None when it is chosen before each call by the machine's load."""
        return self._threads.setting

    @property
    def threads(self) -> int:
        """The threads llama.cpp's context holds now (those of the latest call)."""
        self._check_open()
        return int(self._llama_cpp.llama_n_threads_batch(self._llm.ctx))

    @property
    def path(self) -> str:
        return self._path

    @cached_property
    def model_sha256(self) -> str:
        return file_sha256(self._path)

    @property
    def context_tokens(self) -> int:
        # llama.cpp may round the window up (128 becomes 256) while llama-cpp-python's token
        # buffer keeps the requested size: the smaller one is the real limit.
        return min(int(self._llm.n_ctx()), len(self._llm.input_ids))


class LlamaGenerator(_CausalModel):
    """Plain-text completion from a GGUF decoder model (no chat template: the caller owns the prompt).

    Greedy, hence deterministic for one build, at temperature 0. Not thread-safe.
    """

    def __init__(
        self, path: str | Path, *, n_ctx: int = GENERATION_WINDOW, n_threads: int | None = None,
        verbose: bool = False,
    ) -> None:  # fmt: skip
        self._load(path, n_ctx, n_threads, verbose)
        self.last_tokens = 0  # tokens produced by the latest generate(), for throughput figures
        self.timed_out = False  # whether the latest generate() stopped at its timeout
        self.reused_prefix_tokens = 0  # prompt tokens the latest generate() restored, not evaluated
        self.made_prefix_state = False  # whether the latest generate() computed a new prefix state
        self._grammars: dict[str, Any] = {}
        self._prefix_state: tuple[list[int], bytes] | None = None

    def generate(
        self, prompt: str, *, max_tokens: int, temperature: float = 0.0, seed: int = 0,
        stop: Sequence[str] = (), grammar: str | None = None, timeout: float | None = None,
        stable_prefix: int = 0,
    ) -> str:  # fmt: skip
        """The completion of ``prompt``: at most ``max_tokens`` tokens, cut before any ``stop`` string.

        ``grammar`` (GBNF) constrains every token, so the output always has its shape.
        ``timeout`` (seconds) stops decoding early; ``timed_out`` then says so. A prompt too long
        for the window raises ValueError. ``stable_prefix``: the length of a leading part of
        ``prompt`` that later calls repeat (a few-shot prompt); with a grammar, its state is kept
        and restored next time instead of evaluated again.
        """
        self._check_open()
        if max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        # Forget the previous prompt: reusing its KV-cache prefix could change rounding, and so
        # greedy choices, between a first and a repeated call.
        self._llm.reset()
        self._threads.apply(self._llm.ctx)
        self.timed_out = False
        deadline = None if timeout is None else time.perf_counter() + timeout
        if grammar is not None:
            return self._generate_constrained(prompt, max_tokens, stop, grammar, deadline, stable_prefix)
        options: dict[str, Any] = {}
        if deadline is not None:

            def past_deadline(tokens: Any, logits: Any) -> bool:
                self.timed_out = time.perf_counter() >= deadline
                return self.timed_out

            options["stopping_criteria"] = self._llama_cpp.StoppingCriteriaList([past_deadline])
        result = self._llm.create_completion(
            prompt,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            repeat_penalty=1.0,
            stop=list(stop),
            stream=False,
            **options,
        )
        self.last_tokens = int(result["usage"]["completion_tokens"])
        return str(result["choices"][0]["text"])

    def _generate_constrained(
        self, prompt: str, max_tokens: int, stop: Sequence[str], grammar: str, deadline: float | None,
        stable_prefix: int = 0,
    ) -> str:  # fmt: skip
        """Greedy decoding under a GBNF grammar, checking the grammar on the best few tokens first.

        llama-cpp-python's sampler chain applies the grammar to the whole vocabulary at every step
        (262k tokens for Gemma: about 3x the cost of the step itself). The greedy choice is the
        best token the grammar allows, so checking the 64 best first gives the same token, and
        the whole vocabulary is only checked when none of them is allowed. A line repeated
        word for word ends the output: greedy decoding that repeats itself never stops otherwise.
        """
        import numpy as np

        lc, llm = self._llama_cpp, self._llm
        # The two parts are always tokenized apart, so a first and a repeated call see the same
        # tokens whether or not the prefix's state was restored.
        head = llm.tokenize(prompt[:stable_prefix].encode("utf-8"), add_bos=True, special=False)
        rest = llm.tokenize(prompt[stable_prefix:].encode("utf-8"), add_bos=not head, special=False)
        if len(head) + len(rest) + max_tokens > self.context_tokens:
            raise ValueError(f"the prompt ({len(head) + len(rest)} tokens) is too long for the window")
        vocab = lc.llama_model_get_vocab(llm.model)
        sampler = lc.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), b"root")
        if not sampler:
            raise ValueError("the grammar does not parse")
        produced: list[int] = []
        text = ""
        try:
            self._evaluate_prompt(list(head), list(rest))
            n_vocab = llm.n_vocab()
            for _ in range(max_tokens):
                pointer = lc.llama_get_logits_ith(llm.ctx, -1)
                logits = np.ctypeslib.as_array(pointer, shape=(n_vocab,))
                token = self._allowed_best(sampler, logits, 64)
                if token is None:
                    token = self._allowed_best(sampler, logits, n_vocab)
                if token is None or lc.llama_vocab_is_eog(vocab, token):
                    break
                lc.llama_sampler_accept(sampler, token)
                produced.append(token)
                text = llm.detokenize(produced).decode("utf-8", errors="ignore")
                if any(marker in text for marker in stop) or _repeats_a_line(text):
                    break
                if deadline is not None and time.perf_counter() >= deadline:
                    self.timed_out = True
                    break
                llm.eval([token])
        finally:
            lc.llama_sampler_free(sampler)
        self.last_tokens = len(produced)
        for marker in stop:
            text = text.split(marker, 1)[0]
        return text

    def _evaluate_prompt(self, head: list[int], rest: list[int]) -> None:
        """Evaluate ``head`` then ``rest`` from an empty context, restoring ``head``'s KV state
        when it is the prefix of the previous call (the saved bytes are an exact copy, so the
        logits are the same as evaluating it again). The state is saved, not left in the context,
        because a scorer sharing this context clears it between calls."""
        llm = self._llm
        self.reused_prefix_tokens = 0
        self.made_prefix_state = False
        saved = self._prefix_state
        if head and saved is not None and saved[0] == head and self._restore(saved[1]):
            llm.n_tokens = len(head)
            llm.input_ids[: len(head)] = head
            self.reused_prefix_tokens = len(head)
        elif head:  # a first call, another prefix, or a state this build cannot take
            llm.reset()
            llm.eval(head)
            self._prefix_state = self._saved(head)
            self.made_prefix_state = self._prefix_state is not None
        llm.eval(rest)

    def _restore(self, data: bytes) -> bool:
        state = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        return int(self._llama_cpp.llama_state_seq_set_data(self._llm.ctx, state, len(data), 0)) == len(data)

    def _saved(self, head: list[int]) -> tuple[list[int], bytes] | None:
        lc, ctx = self._llama_cpp, self._llm.ctx
        size = int(lc.llama_state_seq_get_size(ctx, 0))
        buffer = (ctypes.c_uint8 * size)()
        written = int(lc.llama_state_seq_get_data(ctx, buffer, size, 0))
        return (head, bytes(buffer)[:written]) if 0 < written <= size else None

    @property
    def prefix_state(self) -> tuple[list[int], bytes] | None:
        """The kept prefix's tokens and KV state, to store for the next process."""
        return self._prefix_state

    @property
    def state_format(self) -> str:
        """What a stored prefix state is valid for besides the model file: the llama.cpp build
        and the window (a state is the context's own memory layout)."""
        self._check_open()
        return f"llama-cpp-python {getattr(self._llama_cpp, '__version__', '?')}, n_ctx {self._llm.n_ctx()}"

    def adopt_prefix_state(self, tokens: Sequence[int], data: bytes) -> None:
        """Take a stored prefix state (from an earlier process) unless one is kept already; a
        state this build cannot restore is evaluated afresh and replaced on first use."""
        if self._prefix_state is None:
            self._prefix_state = (list(tokens), bytes(data))

    def _allowed_best(self, sampler: Any, logits: Any, count: int) -> int | None:
        """The highest-logit token among the ``count`` best that the grammar allows, or None."""
        import numpy as np

        lc = self._llama_cpp
        best = np.argpartition(-logits, count)[:count] if count < len(logits) else np.arange(len(logits))
        best = best[np.argsort(-logits[best], kind="stable")]
        data = (lc.llama_token_data * len(best))()
        for slot, token in zip(data, best.tolist(), strict=True):
            slot.id, slot.logit, slot.p = token, float(logits[token]), 0.0
        candidates = lc.llama_token_data_array(data=data, size=len(best), selected=-1, sorted=True)
        lc.llama_sampler_apply(sampler, ctypes.byref(candidates))
        for slot in data:
            if slot.logit != float("-inf"):
                return int(slot.id)
        return None

    def _grammar(self, text: str) -> Any:
        # Parsing a grammar costs milliseconds; a long-lived generator keeps the ones it has seen.
        if text not in self._grammars:
            self._grammars[text] = self._llama_cpp.LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]


# Spellings of the answer words that the judgement prompt may be continued with; each one that is
# a single token counts towards its answer.
_YES_SPELLINGS = (" yes", " Yes", "yes", "Yes", " YES")
_NO_SPELLINGS = (" no", " No", "no", "No", " NO")

YES_NO_PROMPT = (
    "Judge whether the document is relevant to the search query. Answer only yes or no.\n"
    "Query: {query}\n"
    "Document: {document}\n"
    "Relevant:"
)


class LlamaYesNoScorer(_CausalModel):
    """Relevance in 0..1 as P(yes) against P(no) for the token after a judgement prompt.

    One forward pass per document, no sampling. Documents too long for the window are cut at
    the token level. Not thread-safe.
    """

    prompt_version = 1

    def __init__(
        self, path: str | Path, *, n_ctx: int = GENERATION_WINDOW, n_threads: int | None = None,
        verbose: bool = False, sharing: _CausalModel | None = None,
    ) -> None:  # fmt: skip
        """``sharing``: an open model of the same file (the generator, when one file serves both
        roles) whose llama.cpp context this scorer uses too: one load instead of two. Both reset
        the context before each call, so they never see each other's tokens."""
        if sharing is not None and sharing.path == str(path):
            self._path, self._llama_cpp, self._threads = sharing._path, sharing._llama_cpp, sharing._threads
            self._llm, self.load_seconds, self._closed = sharing._llm, 0.0, False
        else:
            self._load(path, n_ctx, n_threads, verbose)
        self._yes = self._single_tokens(_YES_SPELLINGS)
        self._no = self._single_tokens(_NO_SPELLINGS)
        if not self._yes or not self._no:
            self.close()
            raise ValueError(f"{self._path}: the vocabulary has no single token for yes or no")
        self.last_prompt_tokens = 0  # tokens evaluated by the latest score/score_batch, for tokens/s

    def _single_tokens(self, spellings: Sequence[str]) -> list[int]:
        found: list[int] = []
        for spelling in spellings:
            tokens = self._llm.tokenize(spelling.encode("utf-8"), add_bos=False, special=False)
            if len(tokens) == 1 and tokens[0] not in found:
                found.append(int(tokens[0]))
        return found

    def score(self, query: str, document: str) -> float:
        """P(yes) normalised over yes and no, in [0, 1]."""
        import numpy as np

        self._check_open()
        tokens = self._prompt_tokens(query, document)
        llm = self._llm
        llm.reset()
        self._threads.apply(llm.ctx)
        llm.eval(tokens)
        self.last_prompt_tokens = len(tokens)
        # With logits_all=False llama-cpp-python no longer copies logits into Llama.scores, so
        # read the last output position straight from the context.
        pointer = self._llama_cpp.llama_get_logits_ith(llm.ctx, -1)
        if not pointer:
            raise RuntimeError("llama.cpp returned no logits")
        logits = np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),)).astype(np.float64)
        yes = _logsumexp(logits[self._yes])
        no = _logsumexp(logits[self._no])
        return float(1.0 / (1.0 + np.exp(no - yes)))

    def score_batch(self, query: str, documents: Sequence[str]) -> list[float]:
        """``score`` of each document, in order: one prompt each, as the judgement is per document."""
        scores: list[float] = []
        tokens = 0
        for document in documents:
            scores.append(self.score(query, document))
            tokens += self.last_prompt_tokens
        self.last_prompt_tokens = tokens
        return scores

    def _prompt_tokens(self, query: str, document: str) -> list[int]:
        def encode(text: str, bos: bool) -> list[int]:
            return list(self._llm.tokenize(text.encode("utf-8"), add_bos=bos, special=False))

        head, tail = YES_NO_PROMPT.split("{document}")
        head_tokens = encode(head.format(query=query), True)
        tail_tokens = encode(tail, False)
        doc_tokens = encode(document, False)
        room = self.context_tokens - len(head_tokens) - len(tail_tokens)
        if room < 1:
            raise ValueError("the query is too long for the scorer's window")
        return head_tokens + doc_tokens[:room] + tail_tokens


def _repeats_a_line(text: str) -> bool:
    """Whether the last finished line of ``text`` is an earlier line again."""
    if not text.endswith("\n"):
        return False
    lines = [" ".join(line.split()) for line in text.split("\n")[:-1]]
    return len(lines) > 1 and lines[-1] in lines[:-1]


def _logsumexp(values: Any) -> float:
    import numpy as np

    top = float(np.max(values))
    return top + float(np.log(np.sum(np.exp(values - top))))
