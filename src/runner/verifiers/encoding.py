"""Tokenisation with evidence-only truncation, and length-sorted padded batches.

Why: a verifier's input is (evidence, answer). When it is longer than ``max_length``, the
evidence is what gets cut, never the answer: cutting the answer would hide exactly the
tokens a verifier must judge. Every cut is counted (examples truncated, tokens removed),
so a table can say how much context a 512-token verifier never saw. An answer that does
not fit by itself is an error naming the example, not a silent cut.

Batches are formed from examples sorted by token length (longest first, ties in input
order) and padded to the batch's longest sequence only; with the attention mask, padding
does not change a model's output beyond float rounding (tests check 1e-5).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from runner.errors import DataError

log = logging.getLogger(__name__)


@dataclass
class TruncationStats:
    """How much evidence the length limit removed.

    Attributes
    ----------
    n_examples : int
    n_truncated : int
        Examples whose evidence was cut.
    tokens_cut : int
        Evidence tokens removed, summed over examples.
    max_tokens_cut : int
        Most tokens removed from one example.
    mean_tokens : float
        Mean model input length (special tokens included) after truncation.
    mean_tokens_untruncated : float
        Mean input length before truncation.
    max_length : int
    """

    n_examples: int
    n_truncated: int
    tokens_cut: int
    max_tokens_cut: int
    mean_tokens: float
    mean_tokens_untruncated: float
    max_length: int

    def to_dict(self) -> dict:
        """JSON-serialisable form."""
        return asdict(self)

    @classmethod
    def merged(cls, parts: Sequence[TruncationStats]) -> TruncationStats:
        """The stats of several calls as if they were one (e.g. a frame scored in chunks).

        Counts and cuts add up, the largest cut is the largest of all, means are weighted
        by each part's examples. Every part must have the same ``max_length``.

        Raises
        ------
        ValueError
            No parts, or parts with different ``max_length`` (not one setting's stats).
        """
        if not parts:
            raise ValueError("TruncationStats.merged: no stats to merge")
        lengths = {p.max_length for p in parts}
        if len(lengths) != 1:
            raise ValueError(f"TruncationStats.merged: different max_length {sorted(lengths)}")
        n = sum(p.n_examples for p in parts)
        return cls(
            n_examples=n,
            n_truncated=sum(p.n_truncated for p in parts),
            tokens_cut=sum(p.tokens_cut for p in parts),
            max_tokens_cut=max(p.max_tokens_cut for p in parts),
            mean_tokens=sum(p.mean_tokens * p.n_examples for p in parts) / n if n else 0.0,
            mean_tokens_untruncated=(
                sum(p.mean_tokens_untruncated * p.n_examples for p in parts) / n if n else 0.0
            ),
            max_length=lengths.pop(),
        )

    @classmethod
    def from_lengths(
        cls, full: Sequence[int], kept: Sequence[int], max_length: int
    ) -> TruncationStats:
        """Stats from untruncated and final lengths."""
        full_a = np.asarray(full, dtype=np.int64)
        kept_a = np.asarray(kept, dtype=np.int64)
        cut = full_a - kept_a
        n = len(full_a)
        return cls(
            n_examples=n,
            n_truncated=int((cut > 0).sum()),
            tokens_cut=int(cut.sum()),
            max_tokens_cut=int(cut.max()) if n else 0,
            mean_tokens=float(kept_a.mean()) if n else 0.0,
            mean_tokens_untruncated=float(full_a.mean()) if n else 0.0,
            max_length=int(max_length),
        )


@dataclass
class Encoded:
    """Token ids of every example, and where the answer's tokens are.

    Attributes
    ----------
    input_ids : list of list of int
        Per example, special tokens included, at most ``max_length`` long.
    token_type_ids : list of list of int or None
        Segment ids when the tokenizer produces them.
    answer_tokens : list of ndarray or None
        Pair encodings only: per example, positions of the answer's tokens.
    answer_offsets : list of list of (int, int) or None
        With ``offsets=True``: per example, character offsets of those tokens in the answer.
    stats : TruncationStats
    answers : list of str or None
        The answers the offsets index (pair encodings).
    example_ids : list of str or None
        Named in errors.
    example_of : ndarray or None
        When examples were split into several inputs (`runner.verifiers.detector_inputs`):
        the example position of each input; None when input i is example i.
    """

    input_ids: list[list[int]]
    token_type_ids: list[list[int]] | None
    answer_tokens: list[np.ndarray] | None
    answer_offsets: list[list[tuple[int, int]]] | None
    stats: TruncationStats
    answers: list[str] | None = None
    example_ids: list[str] | None = None
    example_of: np.ndarray | None = None

    def lengths(self) -> np.ndarray:
        """Input length of every example."""
        return np.fromiter(
            (len(x) for x in self.input_ids), dtype=np.int64, count=len(self.input_ids)
        )


def _answer_too_long(example_id: str, needed: int, max_length: int, what: str) -> DataError:
    return DataError(
        f"{what} is {needed} tokens, which leaves no room for evidence within "
        f"max_length={max_length}. The answer is never truncated: raise the verifier's "
        f"max_length",
        row=example_id,
        field="answer",
    )


def encode_pairs(
    tokenizer,
    premises: Sequence[str],
    hypotheses: Sequence[str],
    max_length: int,
    example_ids: Sequence[str],
    offsets: bool = False,
) -> Encoded:
    """Encode (premise, hypothesis) pairs, cutting only the premise to fit `max_length`.

    Parameters
    ----------
    tokenizer : transformers fast tokenizer
    premises, hypotheses : sequences of str
        Evidence and answer per example.
    max_length : int
        Longest model input, special tokens included.
    example_ids : sequence of str
        Named in errors.
    offsets : bool
        Also return the answer tokens' character offsets in the answer.

    Returns
    -------
    Encoded
        ``answer_tokens`` always set (positions of sequence-1 tokens).
    """
    premises, hypotheses = list(premises), list(hypotheses)
    kwargs = {"return_offsets_mapping": offsets, "return_token_type_ids": True}
    full = tokenizer(premises, hypotheses, **kwargs)
    n_full = [len(ids) for ids in full["input_ids"]]
    overhead = tokenizer.num_special_tokens_to_add(pair=True)
    over = [i for i, n in enumerate(n_full) if n > max_length]
    cut, rows = None, {i: j for j, i in enumerate(over)}  # row of each cut example in `cut`
    if over:
        for i in over:
            n_answer = sum(1 for s in full.sequence_ids(i) if s == 1)
            if n_answer + overhead + 1 > max_length:
                raise _answer_too_long(
                    str(example_ids[i]),
                    n_answer + overhead,
                    max_length,
                    "the answer with its special tokens",
                )
        cut = tokenizer(
            [premises[i] for i in over],
            [hypotheses[i] for i in over],
            truncation="only_first",
            max_length=max_length,
            **kwargs,
        )

    def pick(i: int):
        return (cut, rows[i]) if i in rows else (full, i)

    input_ids, type_ids, answer_tokens, answer_offsets = [], [], [], []
    has_types = "token_type_ids" in full
    for i in range(len(premises)):
        enc, j = pick(i)
        input_ids.append(list(enc["input_ids"][j]))
        if has_types:
            type_ids.append(list(enc["token_type_ids"][j]))
        seq = np.array([s == 1 for s in enc.sequence_ids(j)], dtype=bool)
        positions = np.flatnonzero(seq)
        answer_tokens.append(positions)
        if offsets:
            pairs = enc["offset_mapping"][j]
            answer_offsets.append([(int(pairs[p][0]), int(pairs[p][1])) for p in positions])
    kept = [len(x) for x in input_ids]
    stats = TruncationStats.from_lengths(n_full, kept, max_length)
    _log_stats(stats)
    return Encoded(
        input_ids,
        type_ids if has_types else None,
        answer_tokens,
        answer_offsets if offsets else None,
        stats,
        hypotheses,
        [str(x) for x in example_ids],
    )


def encode_template(
    tokenizer,
    template: str,
    premises: Sequence[str],
    hypotheses: Sequence[str],
    max_length: int,
    example_ids: Sequence[str],
) -> Encoded:
    """Encode ``template.format(text1=premise, text2=hypothesis)``, cutting only the premise.

    The premise is cut at a token boundary of its own tokenisation (character offsets), and
    the prompt is re-encoded until it fits; tokens removed = untruncated length - final
    length.

    Parameters
    ----------
    tokenizer : transformers fast tokenizer
    template : str
        With ``{text1}`` (premise) and ``{text2}`` (hypothesis) fields.
    premises, hypotheses : sequences of str
    max_length : int
    example_ids : sequence of str

    Returns
    -------
    Encoded
        ``answer_tokens`` and ``answer_offsets`` are None.
    """
    premises, hypotheses = list(premises), list(hypotheses)
    prompts = [template.format(text1=p, text2=h) for p, h in zip(premises, hypotheses, strict=True)]
    input_ids = [list(x) for x in tokenizer(prompts)["input_ids"]]
    n_full = [len(x) for x in input_ids]
    for i, n in enumerate(n_full):
        if n <= max_length:
            continue
        empty = len(tokenizer(template.format(text1="", text2=hypotheses[i]))["input_ids"])
        if empty + 1 > max_length:
            raise _answer_too_long(
                str(example_ids[i]),
                empty,
                max_length,
                "the prompt without evidence (template + answer)",
            )
        spans = tokenizer(premises[i], add_special_tokens=False, return_offsets_mapping=True)[
            "offset_mapping"
        ]
        keep = len(spans) - (n - max_length)
        ids = input_ids[i]
        while len(ids) > max_length:
            end = spans[keep - 1][1] if keep >= 1 else 0
            text = template.format(text1=premises[i][:end], text2=hypotheses[i])
            ids = list(tokenizer(text)["input_ids"])
            keep -= max(1, len(ids) - max_length)
        input_ids[i] = ids
    kept = [len(x) for x in input_ids]
    stats = TruncationStats.from_lengths(n_full, kept, max_length)
    _log_stats(stats)
    return Encoded(input_ids, None, None, None, stats, hypotheses, [str(x) for x in example_ids])


def _log_stats(stats: TruncationStats) -> None:
    if stats.n_truncated:
        log.info(
            "truncated the evidence of %d of %d examples to max_length=%d (%d tokens cut, "
            "at most %d from one example)",
            stats.n_truncated,
            stats.n_examples,
            stats.max_length,
            stats.tokens_cut,
            stats.max_tokens_cut,
        )


def length_sorted_batches(
    lengths: Sequence[int], batch_size: int, sort: bool = True
) -> list[np.ndarray]:
    """Index batches: longest first (stable) when `sort`, else input order.

    Parameters
    ----------
    lengths : sequence of int
    batch_size : int
        >= 1.
    sort : bool

    Returns
    -------
    list of ndarray
        Row indices per batch; together they cover every row once.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    n = len(lengths)
    if sort:
        order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    else:
        order = np.arange(n)
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def pad(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad to the longest sequence; returns (ids, attention mask) as int64 arrays."""
    width = max(len(s) for s in sequences)
    ids = np.full((len(sequences), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(sequences), width), dtype=np.int64)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return ids, mask
