"""The rationale of a lexical scorer: which answer tokens the context lacks, which sentence."""

from __future__ import annotations

from runner.features.base import uncovered_fraction
from runner.features.views import ExampleView
from runner.scorers.evidence import lexical_evidence

CONTEXT = "The Delta scooter costs 454 dollars and ships within 2 days."


def test_the_evidence_names_uncovered_tokens_and_the_weakest_sentence():
    answer = "The Delta scooter costs 454 dollars. It is assembled in Norway by robots."
    evidence = lexical_evidence("", CONTEXT, answer)
    assert {"norway", "robots", "assembled"} <= set(evidence.uncovered)
    assert "delta" not in evidence.uncovered and "454" not in evidence.uncovered
    assert evidence.weakest_sentence.startswith("It is assembled in Norway by robots")
    weakest = ExampleView.of("", CONTEXT, evidence.weakest_sentence)
    assert evidence.weakest_uncovered == uncovered_fraction(weakest)
    text = evidence.text(max_tokens=1)
    assert text.startswith("answer tokens not in the context: ") and "more)" in text


def test_a_supported_answer_has_no_uncovered_tokens():
    evidence = lexical_evidence("", CONTEXT, "The Delta scooter costs 454 dollars.")
    assert evidence.uncovered == [] and evidence.weakest_uncovered == 0.0
    assert "not in the context: none" in evidence.text()
