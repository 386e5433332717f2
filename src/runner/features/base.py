"""The base lexical feature family φ of RAGScope: evidence signals computed from text alone.

Each function is pure: it reads one `ExampleView` (question, answer, context, tokenised
once) and returns one float. Shared definitions:

- *tokens* are `runner.text.tokenize` tokens; *content tokens* are tokens that are not in
  `runner.text.STOPWORDS`.
- Shares of the answer count token *occurrences*: an answer that repeats an unsupported
  word three times is three tokens less covered. The study writes the uncovered fraction as
  ``1 - |T(a) ∩ T(c)| / |T(a)|``; we read T(a) as the answer's content-token sequence and
  T(c) as the set of the context's content tokens. On RAGTruth this reading matches the
  published per-task behaviour of the score far better than counting distinct types does.
- The question (task input) is not evidence: a token the answer shares only with the
  question is uncovered.

Degenerate inputs never give NaN. The conventions, one rule each:

- An answer with no content tokens (empty, or only stop words) offers nothing that the
  context can be seen to support, so support features *fail closed*: coverage-type features
  are 0 and risks are 1 (`uncovered_fraction` = 1), routing such answers to review. This
  matches ``rouge_score`` (recall 0 for an empty text) and TF-IDF cosine (0 for an empty
  vector).
- Shares over a *sub*-population of the answer (rare tokens, numbers) are 1 when the answer
  has none of them: no such token is unsupported. The count features tell a learned gate
  whether the sub-population was empty.
- Jaccard similarity of two empty sets is 0 (no overlap observed).
"""

from __future__ import annotations

from itertools import compress

from runner.features.views import ABSENT, ExampleView

RARE_TOKEN_MIN_LENGTH = 6


def answer_length(x: ExampleView) -> float:
    """Number of tokens in the answer (stop words included).

    Returns
    -------
    float
        ``len(x.answer.tokens)``; 0 for an empty answer.
    """
    return float(len(x.answer.tokens))


def context_length(x: ExampleView) -> float:
    """Number of tokens in the context (stop words included).

    Returns
    -------
    float
        ``len(x.context.tokens)``; 0 for an empty context.
    """
    return float(len(x.context.tokens))


def uncovered_fraction(x: ExampleView) -> float:
    """Share of the answer's content-token occurrences absent from the context (s_uncov).

    Returns
    -------
    float
        ``1 - covered / n``, where n counts the answer's content tokens and `covered` those
        whose type occurs among the context's content tokens; 1.0 when n = 0 (fail closed).
    """
    n = len(x.answer.content)
    if n == 0:
        return 1.0
    return 1.0 - len(x.covered_columns) / n


def coverage(x: ExampleView) -> float:
    """Share of the answer's content-token occurrences found in the context.

    Returns
    -------
    float
        Exactly ``1 - uncovered_fraction(x)``; 0.0 for an answer with no content tokens.
    """
    return 1.0 - uncovered_fraction(x)


def rare_token_coverage(x: ExampleView) -> float:
    """Share of the answer's rare content tokens (length ≥ 6) found in the context.

    Long words are mostly names, numbers written out and domain terms: the tokens a
    hallucination tends to invent.

    Returns
    -------
    float
        Covered rare occurrences / rare occurrences; 1.0 when the answer has no rare token.
    """
    content = x.answer.content
    rare = list(compress(content, map(RARE_TOKEN_MIN_LENGTH.__le__, map(len, content))))
    if not rare:
        return 1.0
    return sum(map(x.context.vocabulary.__contains__, rare)) / len(rare)


def jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    """Jaccard similarity of two token sets.

    Parameters
    ----------
    left, right : frozenset of str
        Token sets.

    Returns
    -------
    float
        ``|left ∩ right| / |left ∪ right|``; 0.0 when both are empty.
    """
    common = len(left & right)
    union = len(left) + len(right) - common
    return common / union if union else 0.0


def answer_context_jaccard(x: ExampleView) -> float:
    """Jaccard similarity of the answer's and the context's content-token sets.

    Returns
    -------
    float
        In [0, 1]; 0.0 when neither has a content token.
    """
    return jaccard(x.answer.content_set, x.context.content_set)


def question_answer_jaccard(x: ExampleView) -> float:
    """Jaccard similarity of the question's (task input's) and the answer's content-token sets.

    Returns
    -------
    float
        In [0, 1]; 0.0 when neither has a content token.
    """
    return jaccard(x.question.content_set, x.answer.content_set)


def longest_supported_run(x: ExampleView) -> float:
    """Longest stretch of the answer copied verbatim from the context, as a share of it.

    The run is the longest contiguous sequence of answer tokens (stop words included: they
    are part of a copied phrase) that also occurs contiguously in the context, i.e. the
    longest common token substring.

    Returns
    -------
    float
        Run length / ``len(x.answer.tokens)``, in [0, 1]; 0.0 for an empty answer.
    """
    n = len(x.answer.tokens)
    if n == 0 or not x.context.tokens:
        return 0.0
    haystack = x.context.token_string
    width = 0
    # Runs cannot cross a token the context lacks, so search each stretch between such
    # tokens. Within a stretch the window only grows, and only when the grown window occurs
    # in the context: its final width is the longest common substring, with one substring
    # search per end position (positions before `width` cannot end a longer run).
    for stretch in x.context.encode(x.answer.tokens).split(ABSENT):
        for end in range(width, len(stretch)):
            if stretch[end - width : end + 1] in haystack:
                width += 1
    return width / n


def best_sentence_support(x: ExampleView) -> float:
    """Largest share of the answer's content tokens that a single context sentence holds.

    Parameters
    ----------
    x : ExampleView
        The example (context sentences from `runner.text.split_sentences`).

    Returns
    -------
    float
        Max over context sentences of (answer content-token occurrences whose type occurs
        in that sentence) / (answer content-token occurrences); 0.0 when the answer has no
        content token or the context has no sentence.
    """
    n = len(x.answer.content)
    incidence = x.context.sentence_incidence
    if n == 0 or incidence.shape[0] == 0 or not x.covered_columns:
        return 0.0
    return float((incidence @ x.covered_weights).max()) / n


def numeric_coverage(x: ExampleView) -> float:
    """Share of the numbers written in the answer that also appear in the context.

    Returns
    -------
    float
        Covered number occurrences / number occurrences (string match after stripping
        thousands separators); 1.0 when the answer has no number.
    """
    found = x.answer.numbers
    if not found:
        return 1.0
    known = x.context.number_set
    return len([v for v in found if v in known]) / len(found)


def numeric_count(x: ExampleView) -> float:
    """How many numbers the answer writes (occurrences).

    Returns
    -------
    float
        ``len(x.answer.numbers)``.
    """
    return float(len(x.answer.numbers))
