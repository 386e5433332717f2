"""The token detector's input rule: what the model sees of a context that does not fit.

Why one module: a token classifier trained with one view of the context and scored with
another measures nothing, so training (`runner.training.detector_training`) and inference
(`LettuceDetectVerifier`) build their inputs here and nowhere else.

LettuceDetect's layout: ``[CLS] prompt [SEP] answer [SEP]``; only answer tokens are
scored. About 70 % of RAGTruth inputs exceed 512 tokens, so a rule decides what of the
context enters the window. None of them cuts silently; each reports what it left out.

- ``truncate``: the prompt is cut at the window's end (the verifier's historical rule,
  kept so published runs do not move); the cut is counted.
- ``evidence``: a stated evidence selection. The context is split into units (sentences;
  a sentence longer than ``unit_words`` words is split into pieces of that many words),
  each scored by the content words it shares with the answer (`runner.text.tokenize` +
  `content_tokens`). Units enter in that order (ties: earlier first) while they fit the
  window; a unit that does not fit is skipped and the next tried. The chosen units are
  joined in document order. A context that fits is passed unchanged.
- ``windows``: sliding windows over the context's tokens (``window_overlap`` tokens
  shared by neighbours); every window is paired with the answer and a token's
  probability is the maximum over windows (as LettuceDetect 0.2 and Luna do). Every
  context token is seen; the cost grows with the context.

An answer longer than the window is never dropped: it is scored in consecutive pieces
(each with its own evidence) and counted in `InputStats.answers_split`. A question too
long for the window is cut, never a stop (`fit_questions`): its head is kept, so the
prompt leaves room for `MIN_EVIDENCE_TOKENS` of evidence and `MIN_ANSWER_TOKENS` of
answer; the cut is counted in ``questions_cut``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from runner.errors import ConfigError, DataError
from runner.text import content_tokens, tokenize
from runner.verifiers.encoding import Encoded, encode_pairs
from runner.verifiers.evidence import sentence_spans

RULES = ("truncate", "evidence", "windows")
TEMPLATES = ("lettucedetect", "plain")

QA_TEMPLATE = (
    "Briefly answer the following question:\n{question}\nBear in mind that your response "
    "should be strictly based on the following {num_passages} passages:\n{context}\nIn case "
    "the passages do not contain the necessary information to answer the question, please "
    'reply with: "Unable to answer based on given passages."\noutput:'
)
SUMMARY_TEMPLATE = "Summarize the following text:\n{text}\noutput:"
MIN_EVIDENCE_TOKENS = 32
"""Context tokens every piece keeps room for: an answer piece is at most the window less
the prompt and these."""
MIN_ANSWER_TOKENS = 16
"""Answer tokens every window keeps room for beside the prompt and `MIN_EVIDENCE_TOKENS`:
a longer question is cut to its head (`fit_questions`)."""


def format_prompt(
    question: str, context: str, include_question: bool = True, template: str = "lettucedetect"
) -> str:
    """The prompt for one passage.

    ``lettucedetect``: LettuceDetect's English prompt (lettucedetect 0.2.x,
    ``PromptUtils.format_context``): the QA template with the question when it is
    non-empty, the summary template otherwise. ``plain``: the question (when used) on its
    own line, then the passage; no instructions, so the window holds more evidence.
    """
    asked = include_question and bool(question.strip())
    if template == "plain":
        return f"{question}\n{context}" if asked else context
    block = f"passage 1: {context}"
    if asked:
        return QA_TEMPLATE.format(question=question, num_passages=1, context=block)
    return SUMMARY_TEMPLATE.format(text=block)


@dataclass(frozen=True)
class InputRule:
    """How (question, context, answer) becomes model inputs.

    Attributes
    ----------
    rule : {"truncate", "evidence", "windows"}
    max_length : int
        Longest model input, special tokens included.
    template : {"lettucedetect", "plain"}
    include_question : bool
    window_overlap : int
        ``windows``: context tokens shared by neighbouring windows (at most half a window).
    unit_words : int
        ``evidence``: longest unit in words (longer sentences are split).
    units : {"sentences", "by_form"}
        ``evidence`` of the sentence recipe: what a context is cut into
        (`runner.verifiers.context_units`): sentences, or a record's field facts and
        prose's sentences.
    question_tokens : int or None
        Most tokens the prompt without evidence may take (`fit_questions` cuts a longer
        question to its head); None: all the window leaves. RAGTruth's Data2txt
        "question" is a 60-token writing instruction that took half a 128-token window.
    answer_share : float
        Largest share of the window one answer piece may take; a longer answer is scored
        in more pieces, so each keeps at least the rest of the window for its evidence.
        1.0: a piece takes all but ``MIN_EVIDENCE_TOKENS`` (long answers then see almost
        no evidence: the first trained detector's Summary rows ranked worse than chance).
    """

    rule: str = "evidence"
    max_length: int = 384
    template: str = "plain"
    include_question: bool = True
    window_overlap: int = 64
    unit_words: int = 48
    answer_share: float = 1.0
    units: str = "sentences"
    question_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.units not in ("sentences", "by_form"):  # runner.verifiers.context_units.UNITS
            raise ConfigError(f"detector units {self.units!r} not in ('sentences', 'by_form')")
        if self.rule not in RULES:
            raise ConfigError(f"input rule {self.rule!r} not in {RULES}")
        if self.template not in TEMPLATES:
            raise ConfigError(f"prompt template {self.template!r} not in {TEMPLATES}")
        if self.rule != "truncate" and self.max_length < 4 * MIN_EVIDENCE_TOKENS:
            raise ConfigError(
                f"max_length must be >= {4 * MIN_EVIDENCE_TOKENS} for rule {self.rule!r}, "
                f"got {self.max_length}"
            )
        if not 0.1 <= self.answer_share <= 1.0:
            raise ConfigError(f"answer_share must be in [0.1, 1], got {self.answer_share}")
        if self.unit_words < 1:
            raise ConfigError(f"unit_words must be >= 1, got {self.unit_words}")
        if self.question_tokens is not None and self.question_tokens < 1:
            raise ConfigError(f"question_tokens must be >= 1 or null, got {self.question_tokens}")
        if self.window_overlap < 0:
            raise ConfigError(f"window_overlap must be >= 0, got {self.window_overlap}")

    def to_dict(self) -> dict:
        """JSON-serialisable form (recorded with a trained model)."""
        return asdict(self)


@dataclass
class InputStats:
    """What the rule did to a set of examples.

    Attributes
    ----------
    n_examples, n_segments : int
        Examples, and model inputs built from them (pieces x windows).
    answers_split : int
        Answers longer than one window, scored in pieces.
    contexts_reduced : int
        Examples whose model inputs hold less than their whole context (``evidence``:
        units left out; ``truncate``: prompt cut). Always 0 for ``windows``.
    context_tokens : int
        Context tokens over all examples (each example's context tokenised once).
    context_tokens_seen : int
        Of those, how many entered some model input.
    questions_cut : int
        Questions cut to their head to leave the window room (`fit_questions`).
    """

    n_examples: int
    n_segments: int
    answers_split: int
    contexts_reduced: int
    context_tokens: int
    context_tokens_seen: int
    questions_cut: int = 0

    def to_dict(self) -> dict:
        """JSON-serialisable form, with the share of context seen."""
        out = asdict(self)
        out["context_seen_share"] = (
            self.context_tokens_seen / self.context_tokens if self.context_tokens else 1.0
        )
        return out


@dataclass
class Segments:
    """Model inputs and which example each belongs to.

    ``encoded.answers[i]`` is segment i's *whole* answer and ``encoded.answer_offsets[i]``
    index it, so per-token results of all segments of one example share one coordinate
    system; ``example_of[i]`` is the segment's example position.
    """

    encoded: Encoded
    example_of: np.ndarray
    stats: InputStats


def _n_tokens(tokenizer, texts: Sequence[str]) -> list[int]:
    if not texts:
        return []
    ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    return [len(x) for x in ids]


def fit_questions(
    tokenizer, rule: InputRule, questions: Sequence[str]
) -> tuple[list[str], list[int], int]:
    """The questions as the window can hold them, their prompts' token costs, and the cut.

    The prompt without evidence (`format_prompt` of the question and an empty context)
    may take at most ``max_length`` less the special tokens, `MIN_EVIDENCE_TOKENS` and
    `MIN_ANSWER_TOKENS`, and at most ``rule.question_tokens`` when set. A question whose
    prompt takes more is cut at a token start to the longest head whose prompt fits (its
    start states what is asked), so every row is scored; questions that fit are returned
    unchanged.

    Returns
    -------
    (questions, prompt_costs, cut) : list of str, list of int, int
    """
    questions = list(questions)
    special = tokenizer.num_special_tokens_to_add(pair=True)
    limit = rule.max_length - special - MIN_EVIDENCE_TOKENS - MIN_ANSWER_TOKENS
    if rule.question_tokens is not None:
        limit = min(limit, rule.question_tokens)

    def cost(question: str) -> int:
        prompt = format_prompt(question, "", rule.include_question, rule.template)
        return _n_tokens(tokenizer, [prompt])[0]

    costs = _n_tokens(
        tokenizer, [format_prompt(q, "", rule.include_question, rule.template) for q in questions]
    )
    cut = 0
    for i, question in enumerate(questions):
        if costs[i] <= limit:
            continue
        starts = [
            int(s)
            for s, _ in tokenizer(question, add_special_tokens=False, return_offsets_mapping=True)[
                "offset_mapping"
            ]
        ]
        lo, hi = 0, len(starts)  # heads of lo tokens fit, of hi do not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if cost(question[: starts[mid]].rstrip()) <= limit else (lo, mid)
        head = question[: starts[lo]].rstrip() if lo else ""
        if cost(head) > limit:
            raise ConfigError(
                f"max_length={rule.max_length} leaves no room for the {rule.template!r} "
                "prompt beside evidence and answer; raise max_length"
            )
        questions[i], costs[i], cut = head, cost(head), cut + 1
    return questions, costs, cut


def _answer_pieces(tokenizer, answer: str, room: int, example_id: str) -> list[tuple[int, int]]:
    """Character ranges of the answer, each at most `room` tokens, cut at token starts."""
    if room < 1:
        raise DataError(
            "the prompt without evidence leaves no room for the answer within max_length; "
            "raise max_length",
            row=example_id,
            field="question",
        )
    offsets = tokenizer(answer, add_special_tokens=False, return_offsets_mapping=True)[
        "offset_mapping"
    ]
    if len(offsets) <= room:
        return [(0, len(answer))]
    starts = [int(offsets[i][0]) for i in range(0, len(offsets), room)]
    ends = [*starts[1:], len(answer)]
    return [(0 if k == 0 else s, e) for k, (s, e) in enumerate(zip(starts, ends, strict=True))]


def _units(context: str, unit_words: int) -> list[tuple[int, int]]:
    """Character spans of the context's evidence units, in order, covering its sentences."""
    spans = sentence_spans(context) or [(0, len(context))]
    units: list[tuple[int, int]] = []
    for start, end in spans:
        words = [(m_start, m_end) for m_start, m_end in _word_spans(context, start, end)]
        if len(words) <= unit_words:
            units.append((start, end))
            continue
        for k in range(0, len(words), unit_words):
            chunk = words[k : k + unit_words]
            units.append((chunk[0][0], end if k + unit_words >= len(words) else chunk[-1][1]))
    return units


def _word_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans, i = [], start
    while i < end:
        while i < end and text[i].isspace():
            i += 1
        j = i
        while j < end and not text[j].isspace():
            j += 1
        if j > i:
            spans.append((i, j))
        i = j
    return spans


def _select(
    context: str, units: list[tuple[int, int]], lengths: list[int], answer: str, budget: int
) -> tuple[str, int]:
    """The evidence for one answer piece within `budget` tokens, and its token count."""
    terms = set(content_tokens(tokenize(answer)))
    overlap = [len(terms.intersection(content_tokens(tokenize(context[s:e])))) for s, e in units]
    chosen, used = [], 0
    for i in sorted(range(len(units)), key=lambda i: (-overlap[i], i)):
        if used + lengths[i] + 1 <= budget:
            chosen.append(i)
            used += lengths[i] + 1
    text = " ".join(context[units[i][0] : units[i][1]] for i in sorted(chosen))
    return text, sum(lengths[i] for i in chosen)


def context_windows(tokenizer, context: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """Character ranges of overlapping token windows covering the whole context."""
    offsets = tokenizer(context, add_special_tokens=False, return_offsets_mapping=True)[
        "offset_mapping"
    ]
    n = len(offsets)
    if n <= size:
        return [(0, len(context))]
    step, out, k = size - min(overlap, size // 2), [], 0  # a short window overlaps by half
    while True:
        last = min(k + size, n)
        out.append((int(offsets[k][0]), int(offsets[last - 1][1])))
        if last == n:
            return out
        k += step


def build_segments(
    tokenizer,
    rule: InputRule,
    questions: Sequence[str],
    contexts: Sequence[str],
    answers: Sequence[str],
    example_ids: Sequence[str],
) -> Segments:
    """Model inputs for every example under `rule`.

    Parameters
    ----------
    tokenizer : transformers fast tokenizer
    rule : InputRule
    questions, contexts, answers, example_ids : sequences of str
        Same length; a question may be empty.

    Returns
    -------
    Segments
        Segments of example i are contiguous and in answer order.
    """
    questions, contexts, answers = list(questions), list(contexts), list(answers)
    ids = [str(x) for x in example_ids]
    if rule.rule == "truncate":
        prompts = [
            format_prompt(q, c, rule.include_question, rule.template)
            for q, c in zip(questions, contexts, strict=True)
        ]
        encoded = encode_pairs(tokenizer, prompts, answers, rule.max_length, ids, offsets=True)
        n_ctx = _n_tokens(tokenizer, contexts)
        cut = encoded.stats.tokens_cut
        stats = InputStats(
            len(answers), len(answers), 0, encoded.stats.n_truncated, sum(n_ctx),
            max(0, sum(n_ctx) - cut),
        )  # fmt: skip
        return Segments(encoded, np.arange(len(answers)), stats)

    special = tokenizer.num_special_tokens_to_add(pair=True)
    questions, prompt_cost, questions_cut = fit_questions(tokenizer, rule, questions)
    n_ctx = _n_tokens(tokenizer, contexts)
    premises, pieces, owners, shifts = [], [], [], []
    split = reduced = seen = 0
    for i, (q, c, a) in enumerate(zip(questions, contexts, answers, strict=True)):
        room = min(
            rule.max_length - special - prompt_cost[i] - MIN_EVIDENCE_TOKENS,
            int(rule.answer_share * rule.max_length),
        )
        ranges = _answer_pieces(tokenizer, a, room, ids[i])
        split += len(ranges) > 1
        piece_lengths = _n_tokens(tokenizer, [a[s:e] for s, e in ranges])
        units = lengths = None
        example_seen = 0
        for (start, end), n_piece in zip(ranges, piece_lengths, strict=True):
            budget = rule.max_length - special - prompt_cost[i] - n_piece - 2  # joins' slack
            if rule.rule == "windows":
                windows = context_windows(tokenizer, c, budget, rule.window_overlap)
                evidence = [c[s:e] for s, e in windows]
                example_seen = n_ctx[i]
            elif n_ctx[i] <= budget:
                evidence = [c]
                example_seen = n_ctx[i]
            else:
                if units is None:
                    units = _units(c, rule.unit_words)
                    lengths = _n_tokens(tokenizer, [c[s:e] for s, e in units])
                text, used = _select(c, units, lengths, a[start:end], budget)
                evidence = [text]
                example_seen = max(example_seen, used)
            for ev in evidence:
                premises.append(format_prompt(q, ev, rule.include_question, rule.template))
                pieces.append(a[start:end])
                owners.append(i)
                shifts.append(start)
        reduced += example_seen < n_ctx[i]
        seen += min(example_seen, n_ctx[i])
    seg_ids = [ids[i] for i in owners]
    encoded = encode_pairs(tokenizer, premises, pieces, rule.max_length, seg_ids, offsets=True)
    encoded.answer_offsets = [
        [(s + shift, e + shift) for s, e in offs]
        for offs, shift in zip(encoded.answer_offsets, shifts, strict=True)
    ]
    encoded.answers = [answers[i] for i in owners]
    stats = InputStats(len(answers), len(premises), split, reduced, sum(n_ctx), seen, questions_cut)
    if encoded.stats.n_truncated:  # the budget is computed on separate tokenisations
        stats.contexts_reduced += encoded.stats.n_truncated
    return Segments(encoded, np.asarray(owners, dtype=np.int64), stats)
