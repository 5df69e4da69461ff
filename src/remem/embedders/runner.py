"""Run an ONNX sentence encoder: tokenise, batch by length, pad dynamically, pool, normalise."""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from remem.arrays import FloatArray
from remem.embedders.base import DocumentEmbeddings, Embeddings
from remem.embedders.pooling import pool
from remem.embedders.sessions import load_session
from remem.embedders.spec import ModelFiles, ModelSpec, verified_bytes
from remem.embedders.windows import CHUNK_CHARS, split_windows, text_chunks
from remem.errors import EmbedderError
from remem.types import ModelInfo

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from remem.embedders.unigram import UnigramTokenizer

IntArray = npt.NDArray[np.int64]

DEFAULT_BATCH_SIZE = 32
#: At most this many tokens (padded) per batch: onnxruntime's memory grows with batch × length²
#: (attention), 1 GB for 32 windows of 256 tokens; 8 such windows need 0.35 GB and run as fast.
MAX_BATCH_TOKENS = 2048
#: At most this many tokens in a batch of windows of one length (``uniform_batches``): measured on
#: the calibrated variant, one core, per window against one at a time: 30 tokens × 16 1.26×, 64 × 8
#: 1.09×, 128 × 4 1.06×, 256 × 2 1.00×, but 256 × 8 0.91× (the activations leave the cache).
UNIFORM_BATCH_TOKENS = 512
#: Uniform batches (``_run_uniform``) report progress about this often (in windows).
RUNS_PER_PROGRESS = 32


@dataclass(frozen=True)
class _Tokens:
    ids: list[int]
    dropped: int


@functools.lru_cache(maxsize=4)
def _load_tokenizer(path: str, sha256: str) -> Tokenizer | UnigramTokenizer:
    """The tokenizer in the file at ``path``, made from its bytes once their sha256 is ``sha256``: a
    Unigram one as ``unigram.UnigramTokenizer`` (the library's ids, without its 280 MB trie for
    multilingual-e5-small's 250k pieces), any other as the ``tokenizers`` library's."""
    from tokenizers import Tokenizer  # noqa: PLC0415 - lazy: not needed by list/export

    from remem.embedders.unigram import lean_tokenizer  # noqa: PLC0415

    data = verified_bytes(Path(path), sha256)
    try:
        tokenizer = (b"Unigram" in data and lean_tokenizer(data)) or Tokenizer.from_buffer(data)
    except Exception as exc:  # tokenizers raises plain Exception subclasses
        raise EmbedderError(f"cannot load tokenizer {path}: {exc}") from exc
    tokenizer.no_truncation()  # the shipped file pads and cuts at a fixed 128; we do our own
    tokenizer.no_padding()
    return tokenizer


def cpus() -> int:
    """How many CPUs this process may use (uniform runs go on side by side, one per CPU)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class OnnxEmbedder:
    """Embeds texts with one model on the CPU. Loading is lazy; instances are cheap to create."""

    def __init__(
        self,
        spec: ModelSpec,
        files: ModelFiles,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int = 0,
        file_sha256: str | None = None,
        workers: int = 1,
        uniform: bool = False,
    ) -> None:
        """Bind a model description to its files; ``threads=0`` lets onnxruntime choose.
        ``file_sha256`` what the ONNX file's bytes must hash to before a session is made from them
        (by default the spec's), as the tokenizer's must hash to the spec's. ``uniform``: every batch holds
        windows of one length (nothing padded), ``workers`` batches run at once (give ``threads=1``
        then: one core each); otherwise batches are padded to their longest and run one by one."""
        if batch_size < 1 or workers < 1:
            raise EmbedderError("batch size and workers must be at least 1")
        self.spec = spec
        self.files = files
        self.sha256 = spec.model_sha256
        self._file_sha256 = file_sha256 or spec.model_sha256
        self._batch_size = batch_size
        self._workers = workers
        self._uniform = uniform
        self._threads = threads

    @classmethod
    def of(cls, spec: ModelSpec, files: ModelFiles) -> OnnxEmbedder:
        """The embedder that runs ``files`` as its spec says (``ModelSpec.uniform_batch``)."""
        if spec.uniform_batch:
            return cls(
                spec,
                files,
                batch_size=spec.uniform_batch,
                threads=1,
                workers=cpus(),
                uniform=True,
            )
        return cls(spec, files)

    @property
    def info(self) -> ModelInfo:
        """The model's identity, as a store records it: the sha256 is that of the file that runs
        (an optimised variant's own), so a store never mixes vectors of two files."""
        spec = self.spec
        return ModelInfo(spec.name, spec.dim, spec.pooling.value, self.sha256)

    @property
    def similar_threshold(self) -> float | None:
        """The cosine from which a stored memory is "similar" with this model (None: remem's default)."""
        return self.spec.similar_cosine or None

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages the model was trained for (empty: unknown)."""
        return self.spec.languages

    #: ``embed_documents`` takes ``progress`` (see ``remem.core.bulk.embed_documents``).
    reports_progress = True

    def embed_documents(
        self, texts: Sequence[str], progress: Callable[[int, int], object] | None = None
    ) -> DocumentEmbeddings:
        """Vectors for texts to be stored (no query prefix; the model's document prefix at the start of
        every window): one per window, the whole text covered, run in batches of windows;
        ``progress(windows done, windows)`` after each batch."""
        if not texts:
            return DocumentEmbeddings(())
        self._session()  # before the tokenizer: see ``_session``
        per_text = [self._document_windows(ids) for ids in self._token_ids(texts)]
        flat = [window for windows in per_text for window in windows]
        vectors = self._run_all(flat, progress)
        bounds = np.cumsum([0, *(len(windows) for windows in per_text)])
        return DocumentEmbeddings(tuple(vectors[a:b] for a, b in itertools.pairwise(bounds)))

    def _document_windows(self, ids: list[int]) -> list[list[int]]:
        """A stored text's windows of at most ``ModelSpec.document_window`` tokens, each ``[CLS] prefix
        … [SEP]`` (the same ids as the tokenizer gives for the prefix and the window's text together:
        tests/integration/test_multilingual.py)."""
        prefix = self._document_prefix_ids()
        windows = split_windows(ids, self.spec.document_window - len(prefix))
        return [[window[0], *prefix, *window[1:]] for window in windows] if prefix else windows

    def _document_prefix_ids(self) -> list[int]:
        """The document prefix's token ids (its closing space is the next word's "▁" in a
        SentencePiece tokenizer, so it is left to the text)."""
        prefix = self.spec.document_prefix.rstrip(" ")
        return self._tokenizer().encode(prefix, add_special_tokens=False).ids if prefix else []

    def embed_queries(self, texts: Sequence[str]) -> Embeddings:
        """One vector per search query, the model's query prefix prepended; cut to the window."""
        return self._embed([self.spec.query_prefix + text for text in texts])

    def _tokenizer(self) -> Tokenizer | UnigramTokenizer:
        return _load_tokenizer(str(self.files.tokenizer), self.spec.tokenizer_sha256)

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        tokenizer = self._tokenizer()
        ids = [encoding.ids for encoding in tokenizer.encode_batch([t[:CHUNK_CHARS] for t in texts])]
        for row, text in enumerate(texts):
            if len(text) > CHUNK_CHARS:  # in pieces, so that memory stays bounded whatever the length
                ids[row] = self._long_ids(tokenizer, text)
        return ids

    @staticmethod
    def _long_ids(tokenizer: Tokenizer | UnigramTokenizer, text: str) -> list[int]:
        """A long text's token ids, tokenised in pieces cut at whitespace, between the special
        tokens the tokenizer puts around a text ([CLS] … [SEP] for BERT)."""
        around = tokenizer.encode("").ids
        head, tail = (around[:1], around[1:]) if len(around) == 2 else ([], [])
        ids = list(head)
        for piece in text_chunks(text):
            ids += tokenizer.encode(piece, add_special_tokens=False).ids
        return ids + tail

    def _tokenize(self, texts: Sequence[str]) -> list[_Tokens]:
        window = self.spec.max_tokens
        tokens = []
        for full in self._token_ids(texts):
            dropped = max(0, len(full) - window)
            ids = [*full[: window - 1], full[-1]] if dropped else full  # keep the closing [SEP]
            tokens.append(_Tokens(ids=ids, dropped=dropped))
        return tokens

    def _embed(self, texts: Sequence[str]) -> Embeddings:
        if not texts:
            return Embeddings(np.zeros((0, self.spec.dim), dtype=np.float32), ())
        self._session()  # before the tokenizer: see ``_session``
        tokens = self._tokenize(texts)
        return Embeddings(self._run_all([t.ids for t in tokens]), tuple(t.dropped for t in tokens))

    def _run_all(
        self, sequences: list[list[int]], progress: Callable[[int, int], object] | None = None
    ) -> FloatArray:
        """Vectors of token sequences (rows in input order), run in length-sorted batches."""
        if self._uniform:
            return self._run_uniform(sequences, progress)
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        vectors = np.empty((len(sequences), self.spec.dim), dtype=np.float32)
        start = 0
        while start < len(order):
            batch = order[start : start + self._batch_size]
            longest = len(sequences[batch[-1]])
            batch = batch[: max(1, MAX_BATCH_TOKENS // longest)]  # long windows: fewer per batch
            vectors[batch] = self._run_batch([sequences[i] for i in batch])
            start += len(batch)
            if progress is not None:
                progress(start, len(order))
        return vectors

    def _run_uniform(
        self, sequences: list[list[int]], progress: Callable[[int, int], object] | None
    ) -> FloatArray:
        """Batches of sequences of one length, ``workers`` at once (onnxruntime lets go of the GIL);
        nothing is padded, so each sequence's vector is what it would be alone. The session is loaded
        first, once: workers starting together would each load it."""
        self._session()
        vectors = np.empty((len(sequences), self.spec.dim), dtype=np.float32)
        batches = uniform_batches(sequences, self._batch_size)
        done, reported = 0, 0

        def run(rows: list[int]) -> FloatArray:
            return self._run_batch([sequences[i] for i in rows])

        with contextlib.ExitStack() as stack:
            if min(self._workers, len(batches)) > 1:
                batch_vectors = stack.enter_context(ThreadPoolExecutor(self._workers)).map(run, batches)
            else:  # one batch (a query): run here, no thread started for it
                batch_vectors = map(run, batches)
            for rows, found in zip(batches, batch_vectors, strict=True):
                vectors[rows] = found
                done += len(rows)
                if progress is not None and (done - reported >= RUNS_PER_PROGRESS or done == len(sequences)):
                    progress(done, len(sequences))
                    reported = done
        return vectors

    def _session(self) -> Any:
        """The model's session, made once per process. Made before the tokenizer is loaded: while a
        session is being made onnxruntime holds the graph twice (multilingual-e5-small: 150 MB for
        a moment), so the process's peak memory is lower without the tokenizer beside it."""
        return load_session(str(self.files.model), self._threads, self._file_sha256)

    def _run_batch(self, batch_ids: list[list[int]]) -> FloatArray:
        session = self._session()
        feeds, attention_mask = encoder_feeds(session, batch_ids, str(self.files.model))
        (hidden, *_) = session.run(None, feeds)
        if hidden.ndim != 3 or hidden.shape[2] != self.spec.dim:
            raise EmbedderError(
                f"{self.files.model} returned shape {hidden.shape}, expected (batch, tokens, {self.spec.dim})"
            )
        return pool(self.spec.pooling, hidden, attention_mask)


def uniform_batches(sequences: Sequence[Sequence[int]], size: int) -> list[list[int]]:
    """Row numbers of ``sequences`` in batches of up to ``size`` sequences of one length (and at most
    ``UNIFORM_BATCH_TOKENS`` tokens), shortest first; with ``size`` 1, one row each in input order."""
    if size == 1:
        return [[row] for row in range(len(sequences))]
    by_length: dict[int, list[int]] = {}
    for row, ids in enumerate(sequences):
        by_length.setdefault(len(ids), []).append(row)
    batches = []
    for length in sorted(by_length):
        rows, step = by_length[length], max(1, min(size, UNIFORM_BATCH_TOKENS // max(length, 1)))
        batches += [rows[start : start + step] for start in range(0, len(rows), step)]
    return batches


def encoder_feeds(
    session: Any, batch_ids: Sequence[Sequence[int]], source: str
) -> tuple[dict[str, IntArray], IntArray]:
    """What an encoder's onnxruntime ``session`` is fed for these token id lists (right-padded:
    input_ids, attention_mask, and token_type_ids when it takes them), and the attention mask;
    EmbedderError naming ``source`` when the session lacks input_ids or attention_mask."""
    input_ids, attention_mask = pad_batch(batch_ids)
    feeds = {
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "token_type_ids": np.zeros_like(input_ids),
    }
    declared = {graph_input.name for graph_input in session.get_inputs()}
    missing = {"input_ids", "attention_mask"} - declared
    if missing:
        raise EmbedderError(f"{source} lacks the inputs {sorted(missing)}")
    return {name: feeds[name] for name in declared if name in feeds}, attention_mask


def pad_batch(batch_ids: Sequence[Sequence[int]]) -> tuple[IntArray, IntArray]:
    """Right-pad token id lists to the longest in the batch: (input_ids, attention_mask), int64."""
    width = max(len(ids) for ids in batch_ids)
    input_ids = np.zeros((len(batch_ids), width), dtype=np.int64)
    attention_mask = np.zeros((len(batch_ids), width), dtype=np.int64)
    for row, ids in enumerate(batch_ids):
        input_ids[row, : len(ids)] = ids
        attention_mask[row, : len(ids)] = 1
    return input_ids, attention_mask
