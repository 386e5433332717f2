"""LettuceDetect: a ModernBERT token classifier that marks unsupported answer tokens.

Own wrapper over `AutoModelForTokenClassification` (no dependency on the ``lettucedetect``
package), reproducing its input: a (prompt, answer) token pair, where the prompt is
LettuceDetect's English template (``PromptUtils.format_context`` of lettucedetect 0.2.x:
the QA template with the question and one passage when the question is non-empty, the
summary template otherwise; ``include_question=False`` always uses the summary template).
Unlike lettucedetect (which chunks a long context), the prompt is cut to ``max_length``
(the answer never is) and the cut is counted, like every verifier here.

Per answer token: P(hallucinated) = softmax(logits)[class 1]. Only the answer's tokens are
scored; their character offsets index the answer string, leading whitespace trimmed, and
tokens that are only whitespace (byte-level BPE's lone spaces) are left out. Example
risk is configurable: ``max_prob`` (largest token probability) or ``flagged_share`` (share of
answer tokens with probability above ``threshold``). ``token_scores`` is the stable API the
claim-verification study uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from runner.errors import ConfigError, DataError
from runner.text.token_scores import TokenScores
from runner.verifiers.base import Verifier, inference, log_odds_against, softmax, verifier_class
from runner.verifiers.encoding import Encoded, encode_pairs
from runner.verifiers.loading import LoadedModel

QA_TEMPLATE = (
    "Briefly answer the following question:\n{question}\nBear in mind that your response "
    "should be strictly based on the following {num_passages} passages:\n{context}\nIn case "
    "the passages do not contain the necessary information to answer the question, please "
    'reply with: "Unable to answer based on given passages."\noutput:'
)
SUMMARY_TEMPLATE = "Summarize the following text:\n{text}\noutput:"

HALLUCINATED_CLASS = 1
RISKS = ("max_prob", "flagged_share")


def format_prompt(question: str, context: str, include_question: bool = True) -> str:
    """LettuceDetect's prompt for one passage (lettucedetect 0.2.x, English)."""
    block = f"passage 1: {context}"
    if include_question and question.strip():
        return QA_TEMPLATE.format(question=question, num_passages=1, context=block)
    return SUMMARY_TEMPLATE.format(text=block)


@verifier_class(
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
    Other parameters are `runner.verifiers.base.Verifier`'s, with the defaults given to
    `verifier_class` above.
    """

    kind = "lettucedetect"
    head = "tokens"

    threshold: float = inference(0.5)
    risk: str = inference("max_prob")
    include_question: bool = inference(True)

    def _validate(self) -> None:
        super()._validate()
        if self.risk not in RISKS:
            raise ConfigError(f"lettucedetect: risk {self.risk!r} not in {RISKS}")
        if not 0.0 <= float(self.threshold) < 1.0:
            raise ConfigError(f"lettucedetect: threshold must be in [0, 1), got {self.threshold}")

    def _model_class(self) -> type:
        from transformers import AutoModelForTokenClassification

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

    def _encode_lists(
        self,
        questions: Sequence[str],
        contexts: Sequence[str],
        answers: Sequence[str],
        ids: Sequence[str],
    ) -> Encoded:
        evidence = self.select_evidence(contexts, answers)
        prompts = [
            format_prompt(q, e, self.include_question)
            for q, e in zip(questions, evidence, strict=True)
        ]
        return encode_pairs(
            self.loaded.tokenizer, prompts, list(answers), self.max_length, ids, offsets=True
        )

    def encode(self, frame: pd.DataFrame) -> Encoded:
        """(prompt, answer) pairs with answer-token offsets; only the prompt is cut."""
        return self._encode_lists(
            frame["question"].tolist(),
            frame["context"].tolist(),
            frame["answer"].tolist(),
            frame["example_id"].tolist(),
        )

    def _token_scores(self, logits: list[np.ndarray], encoded: Encoded) -> list[TokenScores]:
        return [
            TokenScores(offsets, softmax(z)[:, HALLUCINATED_CLASS])
            for z, offsets in zip(*self._answer_logits(logits, encoded), strict=True)
        ]

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
        scores = self._token_scores(logits, encoded)
        if self.risk == "max_prob":
            return np.array([s.max_prob() for s in scores])
        return np.array([s.flagged_share(self.threshold) for s in scores])

    def _risk_logit(self, logits: list[np.ndarray], encoded: Encoded) -> np.ndarray:
        if self.risk != "max_prob":
            raise ConfigError("lettucedetect: risk_logit exists for risk=max_prob only")
        rows, _ = self._answer_logits(logits, encoded)
        return np.array([(-log_odds_against(z, HALLUCINATED_CLASS)).max() for z in rows])
