"""LettuceDetect: a token classifier that marks unsupported answer tokens.

Own wrapper over `AutoModelForTokenClassification` (no dependency on the ``lettucedetect``
package), reproducing its input: a (prompt, answer) token pair, where the prompt is
LettuceDetect's English template (``PromptUtils.format_context`` of lettucedetect 0.2.x:
the QA template with the question and one passage when the question is non-empty, the
summary template otherwise; ``include_question=False`` always uses the summary template).
Unlike lettucedetect (which chunks a long context), the prompt is cut to ``max_length``
(the answer never is) and the cut is counted, like every verifier here.

A model trained by ``experiment=train_detector`` (any ``AutoModelForTokenClassification``,
BERT family included, by path, Hub id or ``models:/`` URI) carries ``detector.json``: its
input rule (`runner.verifiers.detector_inputs`: evidence selection or sliding windows,
template, window length) is then used exactly as in training, and a token's probability
is the maximum over the inputs that hold it. ``input_rule`` overrides the rule's name
(e.g. ``windows``) to measure another rule on the same weights.

Per answer token: P(hallucinated) = softmax(logits)[class 1]. Only the answer's tokens are
scored; their character offsets index the answer string, leading whitespace trimmed, and
tokens that are only whitespace (byte-level BPE's lone spaces) are left out. Example
risk is configurable: ``max_prob`` (largest token probability) or ``flagged_share`` (share of
answer tokens with probability above ``threshold``). ``token_scores`` is the stable API the
claim-verification study uses.

A folder trained with the sentence recipe (``detector.json`` ``recipe: sentence``,
`runner.verifiers.sentence_pairs`) is loaded as a sequence classifier and scored the way it
was trained: each answer sentence with its best evidence; the example risk (``max_prob``)
is the card's ``aggregate`` of the sentences' probabilities (``max`` makes it the largest
token probability, as for the token recipe); every token of a sentence carries that
sentence's probability in ``token_scores`` (so spans are whole sentences).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from runner.errors import ConfigError, DataError
from runner.settings import settings_class
from runner.text import TokenScores
from runner.verifiers.base import Verifier, inference, log_odds_against, softmax
from runner.verifiers.detector_card import read_detector_card
from runner.verifiers.detector_inputs import (
    QA_TEMPLATE,
    RULES,
    SUMMARY_TEMPLATE,
    InputRule,
    build_segments,
    format_prompt,
)
from runner.verifiers.encoding import Encoded, encode_pairs
from runner.verifiers.loading import LoadedModel, resolve_source
from runner.verifiers.sentence_pairs import build_pairs, example_risks

HALLUCINATED_CLASS = 1
RISKS = ("max_prob", "flagged_share")
SENTENCE_RECIPE = "sentence"
"""``recipe`` of a sentence-recipe folder's ``detector.json``."""
__all__ = ["QA_TEMPLATE", "SUMMARY_TEMPLATE", "LettuceDetectVerifier", "format_prompt"]


@settings_class(
    model="KRLabsOrg/lettucedect-base-modernbert-en-v1",
    architecture="modernbert_base",
    max_length=4096,  # LettuceDetect's limit
    evidence="full_context",
)
class LettuceDetectVerifier(Verifier):
    """Token-level hallucination detector; example risk from its answer tokens.

    Parameters
    ----------
    threshold : float
        Token flag threshold for ``flagged_share`` (and default for spans).
    risk : {"max_prob", "flagged_share"}
        Which example risk `score` returns (both: `risk_components`).
    include_question : bool
        Put the question in the prompt (QA template).
    input_rule : {None, "truncate", "evidence", "windows"}
        None: the rule of the model's ``detector.json`` when it has one, else ``truncate``
        (the prompt cut to ``max_length``). A name overrides the trained rule's name only.
    Other parameters are `runner.verifiers.base.Verifier`'s, with the defaults given to
    `settings_class` above.
    """

    kind = "lettucedetect"
    head = "tokens"

    threshold: float = inference(0.5)
    risk: str = inference("max_prob")
    include_question: bool = inference(True)
    input_rule: str | None = inference(None)

    def _validate(self) -> None:
        super()._validate()
        if self.risk not in RISKS:
            raise ConfigError(f"lettucedetect: risk {self.risk!r} not in {RISKS}")
        if not 0.0 <= float(self.threshold) < 1.0:
            raise ConfigError(f"lettucedetect: threshold must be in [0, 1), got {self.threshold}")
        if self.input_rule is not None and self.input_rule not in RULES:
            raise ConfigError(f"lettucedetect: input_rule {self.input_rule!r} not in {RULES}")

    def _trained_card(self) -> dict[str, Any] | None:
        """``detector.json`` of the model folder (None: random weights or no card)."""
        if self.weights != "pretrained":
            return None
        return read_detector_card(resolve_source(self.model, self.revision))

    def sentence_recipe(self) -> bool:
        """Whether the loaded (or to-be-loaded) weights were trained by the sentence recipe."""
        card = getattr(self, "_card", None)
        return bool(card) and card.get("recipe") == SENTENCE_RECIPE

    def _model_class(self) -> type:
        from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification

        self._card = self._trained_card()
        if self.sentence_recipe():
            return AutoModelForSequenceClassification
        return AutoModelForTokenClassification

    def _random_model_class(self) -> type:
        from transformers import ModernBertForTokenClassification

        return ModernBertForTokenClassification

    def _after_load(self, loaded: LoadedModel) -> None:
        if loaded.model.config.num_labels != 2:
            raise ConfigError(
                f"lettucedetect: model {loaded.name} has "
                f"{loaded.model.config.num_labels} labels, expected 2"
            )
        self._card = self._trained_card()
        # the base class's forward reads the head: one logit pair per input for a sentence folder
        self.head = "sequence" if self.sentence_recipe() else type(self).head
        positions = getattr(loaded.model.config, "max_position_embeddings", None)
        length = self.rule().max_length
        if self.weights == "pretrained" and positions is not None and length > int(positions):
            raise ConfigError(
                f"lettucedetect: max_length={length} exceeds the {positions} positions of "
                f"{loaded.name}; set max_length <= {positions} (e.g. "
                f"verifiers.<name>.max_length={min(int(positions), 512)})"
            )

    def example_threshold(self) -> float:
        """Risk at or above which an example is flagged: a trained detector's threshold
        chosen on its validation split (``detector.json``), else the token threshold."""
        card = getattr(self, "_card", None)
        if card is None and getattr(self, "_base", None) is None and self.weights == "pretrained":
            card = read_detector_card(resolve_source(self.model, self.revision))
        if card and card.get("threshold") is not None:
            return float(card["threshold"])
        return float(self.threshold)

    def rule(self) -> InputRule:
        """The input rule in force: the trained model's (``detector.json``) or ``truncate``
        at this verifier's ``max_length``; ``input_rule`` renames the rule."""
        card = getattr(self, "_card", None)
        if card is None:
            return InputRule(
                rule=self.input_rule or "truncate",
                max_length=int(self.max_length),
                template="lettucedetect",
                include_question=bool(self.include_question),
            )
        trained = dict(card["input_rule"])
        if self.input_rule is not None:
            trained["rule"] = self.input_rule
        return InputRule(**trained)

    def runtime_info(self) -> dict[str, Any]:
        """The base record plus the input rule in force and what it did in the last call."""
        info = super().runtime_info()
        if getattr(self, "_base", None) is not None:
            info["input_rule"] = self.rule().to_dict()
            info["trained_detector"] = getattr(self, "_card", None) is not None
            info["max_length"] = self.rule().max_length  # the window in force
        stats = getattr(self, "last_input_stats_", None)
        if stats is not None:
            info["input_stats"] = stats
        return info

    def _encode_lists(
        self,
        questions: Sequence[str],
        contexts: Sequence[str],
        answers: Sequence[str],
        ids: Sequence[str],
    ) -> Encoded:
        rule = self.rule()
        if rule.rule == "truncate" and getattr(self, "_card", None) is None:
            evidence = self.select_evidence(contexts, answers)
            prompts = [
                format_prompt(q, e, self.include_question)
                for q, e in zip(questions, evidence, strict=True)
            ]
            return encode_pairs(
                self.loaded.tokenizer, prompts, list(answers), self.max_length, ids, offsets=True
            )
        if self.sentence_recipe():
            pairs = build_pairs(self.loaded.tokenizer, rule, questions, contexts, answers, ids)
            self.last_input_stats_ = pairs.stats.to_dict()
            return pairs.encoded
        segments = build_segments(self.loaded.tokenizer, rule, questions, contexts, answers, ids)
        segments.encoded.example_of = segments.example_of
        self.last_input_stats_ = segments.stats.to_dict()
        return segments.encoded

    def encode(self, frame: pd.DataFrame) -> Encoded:
        """(prompt, answer) pairs with answer-token offsets; only the prompt is cut."""
        return self._encode_lists(
            frame["question"].tolist(),
            frame["context"].tolist(),
            frame["answer"].tolist(),
            frame["example_id"].tolist(),
        )

    def _token_scores(self, logits: list[np.ndarray], encoded: Encoded) -> list[TokenScores]:
        scores = [
            TokenScores(offsets, softmax(z)[:, HALLUCINATED_CLASS])
            for z, offsets in zip(*self._answer_logits(logits, encoded), strict=True)
        ]
        if encoded.example_of is None:
            return scores
        return [_merged(part) for part in _by_example(scores, encoded.example_of)]

    def _answer_logits(
        self, logits: list[np.ndarray], encoded: Encoded
    ) -> tuple[list[np.ndarray], list[list[tuple[int, int]]]]:
        """Logits of the answer's non-blank tokens and their trimmed offsets, per example."""
        rows, spans = [], []
        for i, (tok_logits, positions) in enumerate(
            zip(logits, encoded.answer_tokens, strict=True)
        ):
            answer = encoded.answers[i]
            keep, offsets = [], []
            for p, (start, end) in zip(positions, encoded.answer_offsets[i], strict=True):
                while start < end and answer[start].isspace():
                    start += 1
                if start < end:
                    keep.append(p)
                    offsets.append((start, end))
            if not keep:
                raise DataError(
                    "the answer has no tokens to score", row=encoded.example_ids[i], field="answer"
                )
            if tok_logits.ndim == 1:  # the sentence recipe: the input's logits on each token
                rows.append(np.repeat(tok_logits[None, :], len(keep), axis=0))
            else:
                rows.append(tok_logits[np.asarray(keep)])
            spans.append(offsets)
        return rows, spans

    def token_scores(
        self, questions: Sequence[str], contexts: Sequence[str], answers: Sequence[str]
    ) -> list[TokenScores]:
        """Per answer token, P(hallucinated) and its character offsets in the answer.

        Parameters
        ----------
        questions, contexts, answers : sequences of str
            Same length; a question may be empty.

        Returns
        -------
        list of TokenScores
            One per example, in input order (errors name examples ``#<position>``).
        """
        questions, contexts, answers = list(questions), list(contexts), list(answers)
        if not (len(questions) == len(contexts) == len(answers)):
            raise ValueError("token_scores: questions, contexts and answers differ in length")
        frame = pd.DataFrame(
            {
                "example_id": [f"#{i}" for i in range(len(answers))],
                "question": questions,
                "context": contexts,
                "answer": answers,
            }
        )
        return self._token_scores(*self._outputs(frame))

    def token_score_fingerprint(self) -> dict[str, Any]:
        """What `token_scores` depends on: `score_fingerprint` without ``threshold`` and
        ``risk``, which only turn token probabilities into an example risk."""
        from runner.verifiers.fingerprint import score_fingerprint

        return score_fingerprint(self, ignore=("threshold", "risk"))

    def sentence_logits(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The sentence recipe's log-odds of "hallucinated" for each answer sentence (a
        sentence longer than the window: each piece), one forward pass.

        Returns one row per scored unit, in the frame's row order then answer order:
        ``row`` (position in `frame`), ``example_id``, ``start`` / ``end`` (characters of
        the answer) and ``logit``; the example's ``max_prob`` is the sigmoid of its largest
        ``logit``. Sentence-level fusion reads it (`scripts/detector_fusion.py`).
        """
        self.load()
        if not self.sentence_recipe():
            raise ConfigError("lettucedetect: sentence_logits needs a sentence-recipe model")
        logits, encoded = self._outputs(frame)
        ids = frame["example_id"].tolist()
        rows = []
        for z, offsets, owner in zip(
            logits, encoded.answer_offsets, encoded.example_of, strict=True
        ):
            row = int(owner)
            start, end = min(o[0] for o in offsets), max(o[1] for o in offsets)
            odds = float(-log_odds_against(z, HALLUCINATED_CLASS))
            rows.append((row, ids[row], start, end, odds))
        return pd.DataFrame(rows, columns=["row", "example_id", "start", "end", "logit"])

    def risk_components(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Both example risks: ``max_prob`` and ``flagged_share`` (at `threshold`)."""
        scores = self._token_scores(*self._outputs(frame))
        return pd.DataFrame(
            {
                "max_prob": [s.max_prob() for s in scores],
                "flagged_share": [s.flagged_share(self.threshold) for s in scores],
            },
            index=frame.index,
        )

    def _risk(self, logits: list[np.ndarray], encoded: Encoded) -> np.ndarray:
        if self.sentence_recipe() and self.risk == "max_prob":
            probs = np.array([softmax(z)[HALLUCINATED_CLASS] for z in logits])
            return example_risks(
                probs, encoded.example_of, int(encoded.example_of.max()) + 1, self.aggregate()
            )
        scores = self._token_scores(logits, encoded)
        if self.risk == "max_prob":
            return np.array([s.max_prob() for s in scores])
        return np.array([s.flagged_share(self.threshold) for s in scores])

    def _risk_logit(self, logits: list[np.ndarray], encoded: Encoded) -> np.ndarray:
        if self.risk != "max_prob":
            raise ConfigError("lettucedetect: risk_logit exists for risk=max_prob only")
        if self.sentence_recipe():
            return self._sentence_risk_logit(logits, encoded)
        rows, _ = self._answer_logits(logits, encoded)
        per_input = [(-log_odds_against(z, HALLUCINATED_CLASS)).max() for z in rows]
        if encoded.example_of is None:
            return np.array(per_input)
        return np.array([max(part) for part in _by_example(per_input, encoded.example_of)])

    def aggregate(self) -> str:
        """How a sentence folder's sentences make the example risk (its card's choice)."""
        card = getattr(self, "_card", None) or {}
        return str(card.get("aggregate", "max"))

    def _sentence_risk_logit(self, logits: list[np.ndarray], encoded: Encoded) -> np.ndarray:
        """The sentence recipe's risk on the log-odds scale (``max`` and ``noisy_or``)."""
        how = self.aggregate()
        odds = np.array([-log_odds_against(z, HALLUCINATED_CLASS) for z in logits])
        parts = _by_example(list(odds), encoded.example_of)
        if how == "max":
            return np.array([max(part) for part in parts])
        if how == "noisy_or":  # s = log prod(1 - p) = -sum softplus(z); logit = log(1 - e^s) - s
            out = []
            for part in parts:
                s = -float(np.sum(np.logaddexp(0.0, np.asarray(part))))
                out.append(np.log(-np.expm1(s)) - s)
            return np.array(out)
        raise ConfigError(f"lettucedetect: risk_logit has no form for aggregate {how!r}")


def _by_example(values: list, example_of: np.ndarray) -> list[list]:
    """Per-input values grouped by example, in example order (inputs of one example are
    contiguous, in answer order)."""
    groups: list[list] = [[] for _ in range(int(example_of.max()) + 1 if len(example_of) else 0)]
    for value, owner in zip(values, example_of, strict=True):
        groups[int(owner)].append(value)
    return groups


def _merged(parts: list[TokenScores]) -> TokenScores:
    """One example's token scores from its inputs: a token seen in several windows keeps
    its largest probability; tokens ordered by offset."""
    if len(parts) == 1:
        return parts[0]
    best: dict[tuple[int, int], float] = {}
    for part in parts:
        for offset, p in zip(part.offsets, part.probs, strict=True):
            key = (int(offset[0]), int(offset[1]))
            best[key] = max(best.get(key, 0.0), float(p))
    offsets = sorted(best)
    return TokenScores(offsets, np.array([best[k] for k in offsets]))
