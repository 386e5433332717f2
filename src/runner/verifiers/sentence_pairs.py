"""The sentence recipe's inputs: each answer sentence paired with its best evidence.

Why (issue 31, MiniCheck's idea): the token recipe puts a whole answer in a 256-token
window and sees about a fifth of a RAGTruth context; a sentence is short, so a small
encoder given one sentence at a time sees the evidence that sentence needs. Training
(`runner.training.sentence_training`) and scoring (`LettuceDetectVerifier` on a folder
whose ``detector.json`` names ``recipe: sentence``) build their inputs here and nowhere
else.

The stated selection, per example:

- the answer is split into sentences with the project's splitter
  (`runner.verifiers.evidence.sentence_spans`: `runner.text.split_sentences`, each span
  keeping its terminators); an answer with no sentence at all is one unit. A sentence
  longer than the room the window leaves is cut into consecutive pieces at token starts
  (never dropped), each its own unit;
- the context is split into the evidence units of `runner.verifiers.detector_inputs`
  (sentences, long ones in ``unit_words``-word pieces); a context that fits the window
  beside the sentence is passed whole. Otherwise each unit is scored by the content words
  it shares with the *sentence* (`runner.text.tokenize` + `content_tokens`, the token
  recipe's scoring); units enter best first (ties: earlier first) while they fit, and the
  chosen units are joined in document order;
- a question too long for the window is cut to its head
  (`runner.verifiers.detector_inputs.fit_questions`), counted in ``questions_cut``;
- input: ``[CLS] prompt [SEP] sentence [SEP]`` with the prompt of the input rule's
  template (``plain``: question line, then the evidence), at most ``max_length`` tokens;
- label (training): 1 when the sentence's character range overlaps a gold span by at
  least one character (`runner.verifiers.token_labels`' convention, applied to the
  sentence's tokens: a sentence is 1 exactly when one of its tokens is).

An example's risk is an aggregate of its sentences' probabilities (`aggregate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from runner.errors import ConfigError
from runner.text import content_tokens, tokenize
from runner.verifiers.context_units import context_units
from runner.verifiers.detector_inputs import (
    MIN_EVIDENCE_TOKENS,
    InputRule,
    _answer_pieces,
    _n_tokens,
    fit_questions,
    format_prompt,
)
from runner.verifiers.encoding import Encoded, encode_pairs
from runner.verifiers.evidence import sentence_spans
from runner.verifiers.token_labels import Span, token_labels

AGGREGATES = ("max", "noisy_or", "top2_mean")


@dataclass
class PairStats:
    """What the selection did to a set of examples.

    Attributes
    ----------
    n_examples, n_pairs : int
        Examples and (sentence, evidence) inputs built from them.
    sentences_split : int
        Sentences longer than the room left in the window, scored in pieces.
    pairs_reduced : int
        Inputs that hold less than their whole context.
    evidence_tokens : int
        Context tokens over all inputs (the evidence each input shows).
    questions_cut : int
        Questions cut to their head to leave the window room
        (`runner.verifiers.detector_inputs.fit_questions`).
    """

    n_examples: int
    n_pairs: int
    sentences_split: int
    pairs_reduced: int
    evidence_tokens: int
    questions_cut: int = 0

    def to_dict(self) -> dict:
        """JSON-serialisable form, with inputs per example and mean evidence tokens."""
        out = asdict(self)
        out["pairs_per_example"] = self.n_pairs / self.n_examples if self.n_examples else 0.0
        out["mean_evidence_tokens"] = self.evidence_tokens / self.n_pairs if self.n_pairs else 0.0
        return out


@dataclass
class SentencePairs:
    """Model inputs of every sentence and which example (and answer range) each judges.

    ``encoded.answers[i]`` is the *whole* answer of input i's example and
    ``encoded.answer_offsets[i]`` index it; ``spans[i]`` is the input's character range
    in that answer; ``labels`` (one per input) and ``token_gold`` (one 0/1 per answer token
    of the input, the token recipe's labels) are None unless gold spans were given.
    """

    encoded: Encoded
    example_of: np.ndarray
    spans: list[Span]
    labels: np.ndarray | None
    stats: PairStats
    token_gold: list[np.ndarray] | None = None

    @property
    def lengths(self) -> np.ndarray:
        """Input length of every pair."""
        return self.encoded.lengths()


def sentence_units(tokenizer, answer: str, room: int, example_id: str) -> list[Span]:
    """Character ranges of the answer's sentences, a sentence longer than `room` tokens
    cut into pieces of at most `room` tokens (at token starts)."""
    units: list[Span] = []
    for start, end in sentence_spans(answer) or [(0, len(answer))]:
        for s, e in _answer_pieces(tokenizer, answer[start:end], room, example_id):
            units.append((start + s, start + e))
    return units


def _terms(text: str) -> set[str]:
    return set(content_tokens(tokenize(text)))


def _choose(unit_terms: list[set[str]], lengths: list[int], terms: set[str], budget: int):
    """Positions of the units chosen for one sentence (document order) and their tokens."""
    overlap = [len(terms & t) for t in unit_terms]
    chosen, used = [], 0
    for i in sorted(range(len(unit_terms)), key=lambda i: (-overlap[i], i)):
        if used + lengths[i] + 1 <= budget:
            chosen.append(i)
            used += lengths[i] + 1
    chosen.sort()
    return chosen, sum(lengths[i] for i in chosen)


def build_pairs(
    tokenizer,
    rule: InputRule,
    questions: Sequence[str],
    contexts: Sequence[str],
    answers: Sequence[str],
    example_ids: Sequence[str],
    gold: Sequence[Sequence[Span]] | None = None,
) -> SentencePairs:
    """(evidence, sentence) inputs for every sentence of every example.

    Parameters
    ----------
    tokenizer : transformers fast tokenizer
    rule : InputRule
        Its ``max_length``, ``template``, ``include_question``, ``unit_words`` and
        ``answer_share`` apply; its name must be ``evidence`` (the only selection this
        recipe states).
    questions, contexts, answers, example_ids : sequences of str
    gold : sequence of span lists, optional
        Gold character spans per answer (`runner.verifiers.token_labels.gold_spans`):
        sets ``labels``.

    Returns
    -------
    SentencePairs
        Inputs of example i are contiguous, in answer order.
    """
    if rule.rule != "evidence":
        raise ConfigError(
            f"the sentence recipe selects evidence per sentence (rule 'evidence'); "
            f"got input rule {rule.rule!r}"
        )
    questions, contexts, answers = list(questions), list(contexts), list(answers)
    ids = [str(x) for x in example_ids]
    special = tokenizer.num_special_tokens_to_add(pair=True)
    questions, prompt_cost, questions_cut = fit_questions(tokenizer, rule, questions)
    n_ctx = _n_tokens(tokenizer, contexts)
    premises, hypotheses, owners, ranges, labels = [], [], [], [], []
    split = reduced = evidence_tokens = 0
    for i, (q, c, a) in enumerate(zip(questions, contexts, answers, strict=True)):
        room = min(
            rule.max_length - special - prompt_cost[i] - MIN_EVIDENCE_TOKENS,
            int(rule.answer_share * rule.max_length),
        )
        units = sentence_units(tokenizer, a, room, ids[i])
        split += len(units) - len(sentence_spans(a) or [(0, len(a))])
        piece_lengths = _n_tokens(tokenizer, [a[s:e] for s, e in units])
        ctx_units = ctx_lengths = ctx_terms = joiner = None
        for (start, end), n_piece in zip(units, piece_lengths, strict=True):
            budget = rule.max_length - special - prompt_cost[i] - n_piece - 2  # joins' slack
            if n_ctx[i] <= budget:
                evidence, used = c, n_ctx[i]
            else:
                if ctx_units is None:
                    ctx_units, joiner = context_units(c, rule.unit_words, rule.units)
                    ctx_lengths = _n_tokens(tokenizer, ctx_units)
                    ctx_terms = [_terms(u) for u in ctx_units]
                chosen, used = _choose(ctx_terms, ctx_lengths, _terms(a[start:end]), budget)
                evidence = joiner.join(ctx_units[k] for k in chosen)
                reduced += 1
            evidence_tokens += used
            premises.append(format_prompt(q, evidence, rule.include_question, rule.template))
            hypotheses.append(a[start:end])
            owners.append(i)
            ranges.append((start, end))
            if gold is not None:
                labels.append(
                    int(any(start < g_end and g_start < end for g_start, g_end in gold[i]))
                )
    pair_ids = [ids[i] for i in owners]
    encoded = encode_pairs(tokenizer, premises, hypotheses, rule.max_length, pair_ids, offsets=True)
    encoded.answer_offsets = [
        [(s + shift, e + shift) for s, e in offs]
        for offs, (shift, _) in zip(encoded.answer_offsets, ranges, strict=True)
    ]
    encoded.answers = [answers[i] for i in owners]
    encoded.example_of = np.asarray(owners, dtype=np.int64)
    token_gold = None
    if gold is not None:
        token_gold = [
            token_labels(offs, gold[i])
            for offs, i in zip(encoded.answer_offsets, owners, strict=True)
        ]
    stats = PairStats(len(answers), len(premises), split, reduced, evidence_tokens, questions_cut)
    return SentencePairs(
        encoded,
        encoded.example_of,
        ranges,
        np.asarray(labels, dtype=np.int64) if gold is not None else None,
        stats,
        token_gold,
    )


def subsample_negatives(
    data: SentencePairs, per_positive: float | None, seed: int
) -> SentencePairs:
    """Every positive pair and ``per_positive`` negatives per positive, drawn with `seed`.

    Why: 89 % of RAGTruth train's sentence pairs are negatives, most of them easy; keeping
    a share of them lets one CPU hour see every train row's positives (docs/detector.md).
    Pairs keep their order; None (or more negatives asked than exist) keeps every pair.
    """
    if per_positive is None or data.labels is None:
        return data
    positives = np.flatnonzero(data.labels == 1)
    negatives = np.flatnonzero(data.labels == 0)
    n_keep = round(per_positive * len(positives))
    if n_keep >= len(negatives):
        return data
    rng = np.random.default_rng([seed, 5])
    keep = np.sort(np.concatenate([positives, rng.choice(negatives, n_keep, replace=False)]))
    enc = data.encoded

    def pick(values):
        return None if values is None else [values[i] for i in keep]

    encoded = Encoded(
        input_ids=pick(enc.input_ids),
        token_type_ids=pick(enc.token_type_ids),
        answer_tokens=pick(enc.answer_tokens),
        answer_offsets=pick(enc.answer_offsets),
        stats=enc.stats,
        answers=pick(enc.answers),
        example_ids=pick(enc.example_ids),
        example_of=None if enc.example_of is None else enc.example_of[keep],
    )
    return SentencePairs(
        encoded,
        data.example_of[keep],
        [data.spans[i] for i in keep],
        data.labels[keep],
        data.stats,
        pick(data.token_gold),
    )


def aggregate(probs: Sequence[float], how: str) -> float:
    """An example's risk from its sentences' probabilities.

    ``max``: the least supported sentence; ``noisy_or``: 1 - prod(1 - p), the chance
    that at least one sentence is unsupported if sentences were independent; ``top2_mean``:
    the mean of the two largest (one sentence alone when there is one).
    """
    p = np.asarray(probs, dtype=np.float64)
    if len(p) == 0:
        raise ValueError("aggregate: an example with no sentence")
    if how == "max":
        return float(p.max())
    if how == "noisy_or":
        return float(1.0 - np.prod(1.0 - p))
    if how == "top2_mean":
        return float(np.sort(p)[-2:].mean())
    raise ConfigError(f"sentence aggregate {how!r} not in {AGGREGATES}")


def example_risks(probs: np.ndarray, example_of: np.ndarray, n: int, how: str) -> np.ndarray:
    """Risk of each of `n` examples from the probabilities of their inputs."""
    groups: list[list[float]] = [[] for _ in range(n)]
    for p, owner in zip(probs, example_of, strict=True):
        groups[int(owner)].append(float(p))
    return np.array([aggregate(g, how) for g in groups])
