"""Evidence policies: which part of the context a verifier sees."""

import pytest

from runner.errors import ConfigError
from runner.verifiers.evidence import select_evidence, sentence_spans, top_k_sentences

CONTEXT = (
    "The council met on Monday. It approved a budget of 12 million dollars! "
    "Roads will be repaired; schools get new roofs.\nThe mayor spoke about taxes."
)


def test_sentence_spans_follow_the_project_splitter_and_keep_terminators():
    spans = [CONTEXT[s:e] for s, e in sentence_spans(CONTEXT)]
    assert spans == [
        "The council met on Monday.",
        "It approved a budget of 12 million dollars!",
        "Roads will be repaired;",
        "schools get new roofs.",
        "The mayor spoke about taxes.",
    ]


def test_top_k_keeps_the_sentences_sharing_most_content_tokens_in_document_order():
    answer = "The mayor said taxes stay; the budget is 12 million dollars."
    assert top_k_sentences(CONTEXT, answer, 2) == (
        "It approved a budget of 12 million dollars! The mayor spoke about taxes."
    )


def test_ties_go_to_the_earlier_sentence():
    assert top_k_sentences("Alpha one. Beta two. Gamma three.", "nothing shared", 1) == (
        "Alpha one."
    )


def test_a_context_with_at_most_k_sentences_is_kept_whole():
    assert top_k_sentences("One. Two.", "two", 3) == "One. Two."
    assert top_k_sentences("...", "x", 3) == "..."


def test_full_context_is_unchanged():
    assert select_evidence([CONTEXT], ["x"], "full_context") == [CONTEXT]


@pytest.mark.parametrize(("policy", "k"), [("best_sentences", 3), ("top_k_sentences", 0)])
def test_unknown_policy_or_bad_k_is_a_config_error(policy, k):
    with pytest.raises(ConfigError):
        select_evidence([CONTEXT], ["x"], policy, k)
