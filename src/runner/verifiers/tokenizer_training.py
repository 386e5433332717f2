"""Stand-in tokenizers for random-weight verifiers, trained on the task's own texts.

Why: a random-weight model measures real CPU cost only if it sees realistic sequence
lengths, and sequence length is set by the tokenizer. Without the real tokenizer files
(no Hub access), we train a fast tokenizer of the same kind as the real one (Unigram for
DeBERTa-v3's and T5's SentencePiece models, byte-level BPE for ModernBERT) on the RAGTruth
*train* texts with the model's vocabulary size. On this corpus the Unigram trainer cannot
reach 128,100 pieces for DeBERTa-v3 (it stops near 71k); the size actually reached is
recorded in ``meta.json`` and in the verifier's runtime record. The measured tokens per word
(about 1.2-1.3 on RAGTruth test) are close to what the real SentencePiece/BPE models give
on English news and web text, so the timed sequence lengths are realistic; the exact
segmentation is not, and nothing but timing may be read from such a model.

Trained tokenizers are cached under ``<artifacts>/tokenizers/<name>-<fingerprint>/``; the
fingerprint covers the corpus bytes, the columns read and every training setting, so a
changed corpus or setting trains a new one. The byte-level BPE trainer is deterministic;
the Unigram trainer of ``tokenizers`` is not bit-reproducible (piece ids and scores can
differ between two trainings on the same corpus), though the token counts it yields agree
(two trainings of the T5 stand-in gave the same mean length, 798.18 tokens, over 600
RAGTruth test contexts). The cache makes every run on a machine use one tokenizer, and
``meta.json`` records its sha256 (``tokenizer_sha256``) so a run names the exact one.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from runner.errors import ConfigError, DataNotFoundError
from runner.paths import artifacts_dir, data_dir

log = logging.getLogger(__name__)

TOKENIZER_CODE_VERSION = 1
"""Bump when the training recipe changes, so cached tokenizers are retrained."""

DEFAULT_CORPUS = "ragtruth/train.parquet"
"""Corpus relative to `RUNNER_DATA_DIR` when none is configured."""

DEFAULT_COLUMNS = ("context", "query", "output")
"""Text columns of the raw RAGTruth files (deduplicated before training)."""

_ALGORITHMS = ("unigram", "bpe")
_NORMALIZERS = ("nfkc", "none")


def resolve_corpus(corpus: str | None) -> Path:
    """The corpus file: an explicit path, else `DEFAULT_CORPUS` under the data directory.

    Parameters
    ----------
    corpus : str or None
        Path to a ``.parquet``, ``.jsonl``, ``.csv`` or ``.txt`` file; relative paths are
        tried as given and then under `RUNNER_DATA_DIR`.

    Returns
    -------
    Path
        An existing file.
    """
    name = corpus or DEFAULT_CORPUS
    candidates = [Path(name).expanduser()]
    root = data_dir()
    if root is not None and not Path(name).is_absolute():
        candidates.append(root / name)
    for path in candidates:
        if path.is_file():
            return path.resolve()
    hint = "" if root is not None else " (RUNNER_DATA_DIR is not set)"
    raise DataNotFoundError(
        f"tokenizer corpus {name!r} not found{hint}: a random-weight verifier trains its "
        f"stand-in tokenizer on it. Set RUNNER_DATA_DIR to the data directory, or set the "
        f"verifier's tokenizer_corpus to a text file, or give a real tokenizer with tokenizer=DIR"
    )


def read_corpus(path: Path, columns: Sequence[str] = DEFAULT_COLUMNS) -> list[str]:
    """Unique non-empty texts of the corpus, in first-seen order, column by column.

    Parameters
    ----------
    path : Path
        ``.txt`` (one text per line) or a table (``.parquet``, ``.jsonl``, ``.csv``).
    columns : sequence of str
        Text columns of a table; those absent are skipped, but at least one must exist.

    Returns
    -------
    list of str
    """
    from runner.data import read_text  # lazy: runner.data imports every loader

    suffix = path.suffix.lower()
    if suffix == ".txt":
        raw = read_text(path).splitlines()
    else:
        if suffix == ".parquet":
            frame = pd.read_parquet(path)
        elif suffix == ".jsonl":
            frame = pd.read_json(io.StringIO(read_text(path)), lines=True)
        elif suffix == ".csv":
            frame = pd.read_csv(io.StringIO(read_text(path)))
        else:
            raise ConfigError(f"tokenizer corpus {path}: unsupported file type {suffix!r}")
        present = [c for c in columns if c in frame.columns]
        if not present:
            raise ConfigError(
                f"tokenizer corpus {path}: none of the columns {list(columns)} present "
                f"(has {list(frame.columns)})"
            )
        raw = [t for c in present for t in frame[c].tolist()]
    texts = list(dict.fromkeys(t for t in raw if isinstance(t, str) and t.strip()))
    if not texts:
        raise ConfigError(f"tokenizer corpus {path}: no non-empty texts")
    return texts


def check_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a tokenizer spec (the ``tokenizer`` block of an architecture YAML)."""
    spec = dict(spec)
    for key in ("algorithm", "vocab_size", "special_tokens", "single", "pair"):
        if key not in spec:
            raise ConfigError(f"architecture tokenizer spec: missing key {key!r}")
    if spec["algorithm"] not in _ALGORITHMS:
        raise ConfigError(
            f"architecture tokenizer spec: algorithm {spec['algorithm']!r} not in {_ALGORITHMS}"
        )
    spec.setdefault("normalizer", "none")
    if spec["normalizer"] not in _NORMALIZERS:
        raise ConfigError(
            f"architecture tokenizer spec: normalizer {spec['normalizer']!r} not in {_NORMALIZERS}"
        )
    if int(spec["vocab_size"]) < len(spec["special_tokens"]) + 1:
        raise ConfigError("architecture tokenizer spec: vocab_size smaller than special tokens")
    spec["special_tokens"] = dict(spec["special_tokens"])
    if "unk" not in spec["special_tokens"]:
        raise ConfigError("architecture tokenizer spec: special_tokens needs an 'unk' entry")
    return spec


def tokenizer_fingerprint(
    spec: Mapping[str, Any], corpus_sha256: str, columns: Sequence[str]
) -> str:
    """sha256 of everything that determines the trained tokenizer."""
    payload = json.dumps(
        {
            "spec": dict(spec),
            "corpus": corpus_sha256,
            "columns": list(columns),
            "version": TOKENIZER_CODE_VERSION,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def train_tokenizer(texts: Sequence[str], spec: Mapping[str, Any]) -> Any:
    """Train a fast tokenizer on `texts` following `spec`; returns a transformers tokenizer.

    Parameters
    ----------
    texts : sequence of str
        Training texts.
    spec : mapping
        ``algorithm`` (unigram / bpe), ``vocab_size``, ``normalizer`` (nfkc / none),
        ``special_tokens`` (role -> token, in id order), ``single`` and ``pair`` templates
        (tokenizers' TemplateProcessing syntax).

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        With the special tokens registered under their roles.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from tokenizers import trainers as tk_trainers
    from transformers import PreTrainedTokenizerFast

    spec = check_spec(spec)
    specials = spec["special_tokens"]
    special_list = list(specials.values())
    if spec["algorithm"] == "unigram":
        tok = Tokenizer(models.Unigram())
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = tk_trainers.UnigramTrainer(
            vocab_size=int(spec["vocab_size"]),
            special_tokens=special_list,
            unk_token=specials["unk"],
            show_progress=False,
        )
    else:
        tok = Tokenizer(models.BPE(unk_token=specials["unk"]))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = tk_trainers.BpeTrainer(
            vocab_size=int(spec["vocab_size"]),
            special_tokens=special_list,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
    if spec["normalizer"] == "nfkc":
        tok.normalizer = normalizers.NFKC()
    tok.train_from_iterator(list(texts), trainer=trainer)
    used = [t for t in special_list if t in spec["single"] or t in spec["pair"]]
    tok.post_processor = processors.TemplateProcessing(
        single=spec["single"],
        pair=spec["pair"],
        special_tokens=[(t, tok.token_to_id(t)) for t in used],
    )
    roles = {
        f"{role}_token": token
        for role, token in specials.items()
        if role in ("pad", "cls", "sep", "unk", "mask", "eos", "bos")
    }
    return PreTrainedTokenizerFast(tokenizer_object=tok, **roles)


def cached_tokenizer(
    name: str,
    spec: Mapping[str, Any],
    corpus: str | None = None,
    columns: Sequence[str] = DEFAULT_COLUMNS,
    cache_root: Path | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Load the stand-in tokenizer for an architecture, training and caching it if needed.

    Parameters
    ----------
    name : str
        Architecture name (prefix of the cache folder).
    spec : mapping
        Tokenizer spec (see `train_tokenizer`).
    corpus : str or None
        Training corpus (see `resolve_corpus`).
    columns : sequence of str
        Text columns of a table corpus.
    cache_root : Path or None
        Default ``<artifacts>/tokenizers``.

    Returns
    -------
    (tokenizer, meta)
        ``meta`` holds the fingerprint, corpus path and sha256, number of texts, and the
        requested and reached vocabulary sizes.
    """
    from transformers import PreTrainedTokenizerFast

    from runner.data import sha256_file

    spec = check_spec(spec)
    path = resolve_corpus(corpus)
    corpus_sha = sha256_file(path)
    fingerprint = tokenizer_fingerprint(spec, corpus_sha, columns)
    root = cache_root or artifacts_dir() / "tokenizers"
    folder = root / f"{name}-{fingerprint[:16]}"
    meta_file = folder / "meta.json"
    if meta_file.is_file():
        return PreTrainedTokenizerFast.from_pretrained(str(folder)), json.loads(
            meta_file.read_text()
        )
    texts = read_corpus(path, columns)
    log.info(
        "training %s tokenizer for %s on %d texts from %s (cached in %s)",
        spec["algorithm"],
        name,
        len(texts),
        path,
        folder,
    )
    tokenizer = train_tokenizer(texts, spec)
    meta = {
        "fingerprint": fingerprint,
        "architecture": name,
        "algorithm": spec["algorithm"],
        "corpus": str(path),
        "corpus_sha256": corpus_sha,
        "columns": list(columns),
        "n_texts": len(texts),
        "vocab_size_requested": int(spec["vocab_size"]),
        "vocab_size_reached": len(tokenizer),
        "tokenizer_sha256": hashlib.sha256(
            tokenizer.backend_tokenizer.to_str().encode()
        ).hexdigest(),
    }
    if meta["vocab_size_reached"] < meta["vocab_size_requested"]:
        log.info(
            "tokenizer %s: reached %d of %d requested pieces on this corpus",
            name,
            meta["vocab_size_reached"],
            meta["vocab_size_requested"],
        )
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        tokenizer.save_pretrained(str(tmp))
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True))
        try:
            os.replace(tmp, folder)
        except OSError:  # another process cached it first: theirs is identical by fingerprint
            if not meta_file.is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return tokenizer, meta
