"""llama.cpp in this process (its import, log, loading lock, threads, decode) and sentence embeddings.

llama_cpp (and numpy, which it brings) are imported when a model is created, so the keyword-only
install can import this module. The decoder models (generation, yes/no scoring) are in
llama_causal.py, the GGUF header reader in gguf.py. An embedder is not thread-safe: give each
thread its own, or serialise calls.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import queue
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import Any

from .gguf import cached_gguf_metadata, file_sha256
from .lifetime import ClosableModel
from .system import available_memory
from .threads import AutoThreads, usable_cpus

__all__ = ["MISSING_EXTRA", "LlamaEmbedder", "decode_sequences", "import_llama_cpp", "open_llama"]

MISSING_EXTRA = "the models extra is not installed: pip install 'tansaku[models]'"

# A window beyond this costs quadratic attention time for little gain in retrieval, and callers
# split long texts anyway.
MAX_WINDOW = 2048
# Texts embedded side by side, each in its own llama.cpp context of the one model, when the
# threads allow: on 2 cores two contexts of 1 thread each beat one context of 2 threads (whose
# threads spin waiting for each other, the more so when another process takes a core): measured
# in evals/RESULTS-embed.md ("Lanes"). More lanes would each cost a context's memory.
MAX_LANES = 2
LANES_ENV = "TANSAKU_EMBED_LANES"  # 1: one context, its threads working together on each text
# A second context costs about its compute buffers plus a row of output per token (0.4-0.9 GB
# for EmbeddingGemma): below this much free memory, texts are embedded one after another.
LANE_MEMORY = 1 << 30

# llama.cpp's pooling types, as written in GGUF files (enum llama_pooling_type).
POOLING_NAMES = {0: "none", 1: "mean", 2: "cls", 3: "last", 4: "rank"}
_POOLING_MEAN = 1
POOLING_RANK = 4


def import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise ImportError(MISSING_EXTRA) from exc
    LOG_SINK.install(llama_cpp)
    return llama_cpp


class _LogSink:
    """Receives llama.cpp's log lines: keeps the recent ones for error messages, echoes on request.

    ``Llama(verbose=False)`` still lets llama.cpp print warnings to stderr, which would corrupt
    the CLI's output; llama.cpp has one process-wide log callback, so this sink replaces it once.
    """

    def __init__(self) -> None:
        self.echo = False
        self.recent: deque[str] = deque(maxlen=40)
        self._callback: Any = None  # the ctypes thunk; must stay referenced while installed

    def install(self, llama_cpp: Any) -> None:
        if self._callback is None:
            self._callback = llama_cpp.llama_log_callback(self._receive)
            llama_cpp.llama_log_set(self._callback, ctypes.c_void_p(0))

    def _receive(self, level: int, text: bytes | None, user_data: Any) -> None:
        line = (text or b"").decode("utf-8", "replace")
        self.recent.append(line)
        if self.echo:
            sys.stderr.write(line)

    def last_error(self) -> str:
        """The tail of what llama.cpp said, for an exception message."""
        lines = [line.strip() for line in self.recent if line.strip()]
        return "; ".join(lines[-3:])


LOG_SINK = _LogSink()


# Two llama.cpp models loading at once in one process (two threads of a server) end the process
# without a word (seen with MiniLM and Gemma 3, llama-cpp-python 0.3.36); running one model while
# another loads is fine. Every load goes through here, one at a time.
_LOADING = threading.Lock()


def open_llama(llama_cpp: Any, path: str, **options: Any) -> Any:
    """``llama_cpp.Llama`` for ``path``, loaded while no other model loads; a file llama.cpp
    refuses is a ValueError carrying llama.cpp's own last error line."""
    with _LOADING:
        LOG_SINK.recent.clear()
        try:
            return llama_cpp.Llama(model_path=path, **options)
        except (ValueError, RuntimeError) as exc:
            said = LOG_SINK.last_error()
            why = f": {said}" if said else ""
            raise ValueError(f"{path} could not be loaded by llama.cpp{why}") from exc


def max_lanes() -> int:
    """``TANSAKU_EMBED_LANES`` (1 or more), else MAX_LANES."""
    raw = os.environ.get(LANES_ENV, "").strip()
    if raw.isdigit() and int(raw) >= 1:
        return int(raw)
    return MAX_LANES


class Threads:
    """The thread count of one llama.cpp context: a fixed number, or chosen before each decode.

    None means automatic: the usable CPUs less those other processes keep busy (``AutoThreads``;
    the measurements behind it are in ``threads.py``). ``llama_set_n_threads`` changes the count
    of a live context for its next decode, so one context serves every count.
    """

    def __init__(self, llama_cpp: Any, setting: int | None) -> None:
        self._llama_cpp = llama_cpp
        self.set(setting)
        self._auto: AutoThreads | None = None
        # What the context is created with; the first ``apply`` corrects an automatic guess.
        self.current = setting if setting is not None else usable_cpus()

    def set(self, setting: int | None) -> None:
        if setting is not None and setting < 1:
            raise ValueError(f"threads must be at least 1, not {setting}")
        self.setting = setting

    def wanted(self) -> int:
        """The count the next decode should use: the fixed setting, or chosen by the load now."""
        if self.setting is not None:
            return self.setting
        if self._auto is None:
            self._auto = AutoThreads()
        return self._auto.choose()

    def apply(self, ctx: Any) -> int:
        """Set the count for the next decode of ``ctx``; returns it."""
        wanted = self.wanted()
        if wanted != self.current:
            self._llama_cpp.llama_set_n_threads(ctx, wanted, wanted)
            self.current = wanted
        return wanted


# A context to decode in: (llama.cpp context, its batch, its threads).
Lane = tuple[Any, Any, Threads]


# Models still open when the interpreter exits are closed first: left to llama_cpp's own __del__
# during teardown, they print "Exception ignored ... 'NoneType' object is not callable".
OPEN_MODELS: weakref.WeakSet[Any] = weakref.WeakSet()


@atexit.register
def _close_open_models() -> None:
    for model in list(OPEN_MODELS):
        with contextlib.suppress(Exception):
            model.close()


class LlamaEmbedder(ClosableModel):
    """L2-normalised sentence embeddings from a GGUF file (``embedding=True``, pooling per the file).

    ``n_threads``: llama.cpp's threads for every decode; None (the default) chooses them before
    each decode from the machine's load (``set_threads`` changes it later). Raises
    FileNotFoundError for a missing file, ValueError for a file that is not a usable GGUF embedding
    model, ImportError when llama-cpp-python is not installed.
    """

    # embed(texts, pack=True) is available: many short texts in one decode.
    packs = True

    def __init__(self, path: str, *, n_threads: int | None = None, verbose: bool = False) -> None:
        llama_cpp = import_llama_cpp()
        self._llama_cpp = llama_cpp
        self._path = str(path)
        meta = cached_gguf_metadata(self._path)
        self._family = str(meta.get("general.architecture", ""))
        if not self._family:
            raise ValueError(f"{self._path}: GGUF file has no general.architecture")
        trained = meta.get(f"{self._family}.context_length")
        if not isinstance(trained, int) or trained <= 0:
            raise ValueError(f"{self._path}: GGUF file has no {self._family}.context_length")
        pooling = meta.get(f"{self._family}.pooling_type")
        if pooling == POOLING_RANK:
            raise ValueError(f"{self._path} is a reranker (rank pooling), not an embedding model")
        window = meta.get("sentence_transformers.max_seq_length")
        self._trained_window = window if isinstance(window, int) and window > 0 else None

        self._n_ctx = min(trained, MAX_WINDOW)
        self._threads = Threads(llama_cpp, n_threads)
        LOG_SINK.echo = verbose
        kwargs: dict[str, Any] = {
            "embedding": True,
            "n_ctx": self._n_ctx,
            # Every sequence must fit in one micro-batch (non-causal attention sees all of it),
            # and a larger batch only packs more sequences into one quadratic attention window.
            "n_batch": self._n_ctx,
            "n_ubatch": self._n_ctx,
            "n_threads": self._threads.current,
            "n_threads_batch": self._threads.current,
            "flash_attn": True,
            "verbose": verbose,
        }
        if not isinstance(pooling, int) or pooling == 0:
            # Decoder models carry no pooling: mean pooling gives them a usable sentence vector.
            kwargs["pooling_type"] = _POOLING_MEAN
        started = time.perf_counter()
        self._llm = open_llama(llama_cpp, self._path, **kwargs)
        self.load_seconds = time.perf_counter() - started
        self._dims = int(self._llm.n_embd())
        self._pooling = POOLING_NAMES.get(int(self._llm.pooling_type()), "unknown")
        self._overhead = len(self._llm.tokenize(b"", add_bos=True, special=False))
        self._n_seq_max = min(self._n_ctx, int(llama_cpp.llama_max_parallel_sequences()))
        self._batch = llama_cpp.llama_batch_init(self._n_ctx, 0, 1)
        # Contexts beside the model's own for embedding texts side by side: (ctx, batch).
        self._lanes: list[tuple[Any, Any]] = []
        self._side_by_side = 1  # contexts the latest embed used
        self._closed = False
        OPEN_MODELS.add(self)

    # -- facts about the model -------------------------------------------------------------

    @property
    def path(self) -> str:
        return self._path

    @property
    def dims(self) -> int:
        return self._dims

    @property
    def context_tokens(self) -> int:
        """The most tokens a text may have (as counted by ``count_tokens``) to be embedded whole."""
        return self._n_ctx - self._overhead

    @property
    def window_tokens(self) -> int:
        """The most tokens of text one embedded window holds: the trained window where the model
        declares one (MiniLM: 256, so 254 besides [CLS] and [SEP]), else ``context_tokens``.
        Measured with MiniLM, longer windows than it was trained on embed worse (issue 10)."""
        if self._trained_window is None:
            return self.context_tokens
        return max(1, min(self.context_tokens, self._trained_window - self._overhead))

    @property
    def trained_window(self) -> int | None:
        """The window the model was trained for (sentence-transformers' max_seq_length), if known.

        Can be smaller than ``context_tokens`` (256 against 510 for MiniLM): longer texts embed,
        but the model never saw positions past it in training.
        """
        return self._trained_window

    @property
    def model_family(self) -> str:
        """The GGUF ``general.architecture``, e.g. ``bert``."""
        return self._family

    @property
    def pooling(self) -> str:
        return self._pooling

    # -- threads ---------------------------------------------------------------------------

    @property
    def thread_setting(self) -> int | None:
        """The fixed thread count, or None when it is chosen before each decode."""
        return self._threads.setting

    @property
    def threads(self) -> int:
        """The threads of the latest decode (or of the next, for a fixed setting not used yet):
        read back from the model's context, times the contexts when texts went side by side."""
        self._check_open()
        per_context = int(self._llama_cpp.llama_n_threads_batch(self._llm.ctx))
        return per_context * self._side_by_side

    @property
    def side_by_side(self) -> int:
        """Contexts the latest ``embed`` decoded in at once (1: one text after another)."""
        return self._side_by_side

    def set_threads(self, n_threads: int | None) -> None:
        """Use ``n_threads`` for the next decodes; None chooses them by the machine's load."""
        self._check_open()
        self._threads.set(n_threads)
        if n_threads is not None:
            self._threads.apply(self._llm.ctx)
            self._side_by_side = 1

    @cached_property
    def file_sha256(self) -> str:
        return file_sha256(self._path)

    # -- tokens ----------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[int]:
        """The model's tokens for ``text``, without the special tokens an embedding adds."""
        self._check_open()
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def unreadable_share(self, text: str) -> float:
        """The share of ``text``'s tokens the model cannot read (models/languages.py): unknown to
        its vocabulary, or in a CJK script its declared languages leave out."""
        from .languages import unreadable_share

        return unreadable_share(
            self.tokenize(text),
            self._llm.metadata.get("tokenizer.ggml.unknown_token_id"),
            cached_gguf_metadata(self._path).get("general.languages"),
            self._piece,
        )

    def _piece(self, token: int) -> str:
        return bytes(self._llm.detokenize([token])).decode("utf-8", "ignore")

    # -- embeddings ------------------------------------------------------------------------

    def embed(
        self, texts: Sequence[str], *, pack: bool = False, pack_tokens: int | None = None
    ) -> list[list[float]]:
        """One unit-length vector per text, in order. A text over ``context_tokens`` raises ValueError.

        By default each text is its own llama.cpp batch, so a text's vector is bit-for-bit the
        same whatever it is embedded with. ``pack=True`` puts as many texts as fit in the window
        into one batch: faster for short texts (not for ~200-token ones, two of which fill the
        window), but llama.cpp's kernels then round differently with the texts' places in the
        batch, moving components by up to ~1e-4 (cosine to the unpacked vector > 0.99999).
        ``pack_tokens`` caps a packed batch's tokens: llama.cpp keeps a vocabulary-wide row of
        output per token of the largest batch (1 MiB for EmbeddingGemma), so a full 2,048-token
        batch costs 2 GB of memory for no gain in speed (evals/RESULTS-embed.md, the quick pass).
        """
        self._check_open()
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts: wrap a single text in a list")
        encoded = [self._encode(i, text) for i, text in enumerate(texts)]
        per_batch = self._n_seq_max if pack else 1
        room = min(self._n_ctx, pack_tokens or self._n_ctx)
        groups: list[list[list[int]]] = []
        used = 0
        for tokens in encoded:
            if not groups or used + len(tokens) > room or len(groups[-1]) >= per_batch:
                groups.append([])
                used = 0
            groups[-1].append(tokens)
            used += len(tokens)
        return self._decode_groups(groups)

    def _decode_groups(self, groups: list[list[list[int]]]) -> list[list[float]]:
        """Each group in one decode: one after another in the model's context, or side by side in
        up to MAX_LANES contexts (``_lane_room``), the threads shared between them. A text gives
        the same vector in any context (each decode starts from an empty one)."""
        lanes = self._open_lanes(min(max_lanes(), self._lane_room(), len(groups))) if len(groups) > 1 else []
        if not lanes:
            self._side_by_side = 1
            return [vector for group in groups for vector in self._decode(group)]
        contexts = [(self._llm.ctx, self._batch), *lanes]
        self._side_by_side = len(contexts)
        per_lane = max(1, self._threads.wanted() // len(contexts))
        for ctx, _ in contexts:
            self._llama_cpp.llama_set_n_threads(ctx, per_lane, per_lane)
        self._threads.current = per_lane  # the model's context, for the next single decode
        lane_threads = Threads(self._llama_cpp, per_lane)
        free: queue.SimpleQueue[tuple[Any, Any]] = queue.SimpleQueue()
        for context in contexts:
            free.put(context)

        def decode(group: list[list[int]]) -> list[list[float]]:
            ctx, batch = free.get()
            try:
                return self._decode(group, (ctx, batch, lane_threads))
            finally:
                free.put((ctx, batch))

        with ThreadPoolExecutor(max_workers=len(contexts), thread_name_prefix="embed-lane") as pool:
            futures = [pool.submit(decode, group) for group in groups]
            try:
                results = [future.result() for future in futures]
            except BaseException:
                # An error or Ctrl-C: decodes not started are dropped, running ones finish.
                for future in futures:
                    future.cancel()
                raise
        return [vector for result in results for vector in result]

    def _lane_room(self) -> int:
        """Contexts that may run at once: the fixed thread count, or with automatic threads every
        usable CPU, however busy. Unlike two threads on one text, two contexts never wait for each
        other, so a busy machine only slows each (the automatic choice of 1 thread a context is
        about those waits: RESULTS-threads.md)."""
        setting = self._threads.setting
        return setting if setting is not None else usable_cpus()

    def _open_lanes(self, count: int) -> list[tuple[Any, Any]]:
        """Up to ``count - 1`` contexts beside the model's own (made once, kept): fewer where
        llama.cpp cannot make one or memory is short."""
        lc = self._llama_cpp
        while len(self._lanes) < count - 1:
            free = available_memory()
            if free is not None and free < LANE_MEMORY:
                break
            params = type(self._llm.context_params).from_buffer_copy(self._llm.context_params)
            with _LOADING:  # llama.cpp allocates for the context as for a model load
                ctx = lc.llama_init_from_model(self._llm.model, params)
            if not ctx:
                break
            self._lanes.append((ctx, lc.llama_batch_init(self._n_ctx, 0, 1)))
        return self._lanes[: max(0, count - 1)]

    def raw_throughput(self, texts: Sequence[str]) -> float:
        """Texts per second for ``texts`` through llama-cpp-python's own ``Llama.embed``, as a baseline."""
        self._check_open()
        for i, text in enumerate(texts):
            self._encode(i, text)  # the same refusal of over-long texts as ``embed``
        self._threads.apply(self._llm.ctx)
        started = time.perf_counter()
        self._llm.embed(list(texts), normalize=True, truncate=False)
        elapsed = time.perf_counter() - started
        return len(texts) / elapsed if elapsed > 0 else float("inf")

    def _encode(self, index: int, text: str) -> list[int]:
        tokens = self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        if len(tokens) > self._n_ctx:
            raise ValueError(
                f"text {index} has {len(tokens) - self._overhead} tokens, more than the model's window "
                f"of {self.context_tokens}: split it into windows before embedding"
            )
        return tokens

    def _decode(self, group: list[list[int]], lane: Lane | None = None) -> list[list[float]]:
        """One decode of ``group`` in a lane's (context, batch, threads), the model's own by default."""
        import numpy as np

        lc = self._llama_cpp
        ctx, batch, threads = lane or (self._llm.ctx, self._batch, self._threads)
        decode_sequences(lc, ctx, batch, group, threads, "embed a batch")
        vectors = []
        for seq in range(len(group)):
            pointer = lc.llama_get_embeddings_seq(ctx, seq)
            if not pointer:
                raise RuntimeError("llama.cpp returned no pooled embedding")
            vector = np.ctypeslib.as_array(pointer, shape=(self._dims,)).astype(np.float64)
            norm = float(np.linalg.norm(vector))
            if norm > 0:
                vector /= norm
            vectors.append(vector.tolist())
        return vectors

    # -- lifetime --------------------------------------------------------------------------

    closed_message = "the embedder is closed"

    def _release(self) -> None:
        for ctx, batch in self._lanes:
            self._llama_cpp.llama_batch_free(batch)
            self._llama_cpp.llama_free(ctx)
        self._lanes = []
        self._llama_cpp.llama_batch_free(self._batch)
        self._llm.close()


def decode_sequences(
    llama_cpp: Any, ctx: Any, batch: Any, group: Sequence[Sequence[int]], threads: Threads, what: str
) -> None:
    """One llama.cpp decode of several token sequences (sequence i is ``group[i]``) from an empty
    KV cache, every token an output: what pooled outputs (embeddings, rank scores) need."""
    j = 0
    for seq, tokens in enumerate(group):
        for pos, token in enumerate(tokens):
            batch.token[j] = token
            batch.pos[j] = pos
            batch.n_seq_id[j] = 1
            batch.seq_id[j][0] = seq
            # Pooled outputs want every token marked as an output, or llama.cpp warns.
            batch.logits[j] = True
            j += 1
    batch.n_tokens = j
    memory = llama_cpp.llama_get_memory(ctx)
    if memory:
        # Decoder models keep a KV cache; each batch must start from an empty one.
        llama_cpp.llama_memory_clear(memory, True)
    threads.apply(ctx)
    status = llama_cpp.llama_decode(ctx, batch)
    if status != 0:
        raise RuntimeError(f"llama.cpp failed to {what} (llama_decode returned {status})")
