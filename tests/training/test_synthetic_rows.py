"""Synthetic hallucinations from train rows: one value of a supported sentence swapped."""

from __future__ import annotations

import numpy as np
import pandas as pd

from runner.training.synthetic_rows import positive_sentences, swap_value, synthetic_rows

CONTEXT = "Apna Kitchen in Santa Barbara opens at 16:30 and has 4.5 stars. It closes at 21:00."
ROWS = pd.DataFrame(
    {
        "example_id": ["a", "b"],
        "group_id": ["g1", "g1"],
        "task": ["Data2txt", "Data2txt"],
        "question": ["", ""],
        "context": [CONTEXT, CONTEXT],
        "answer": [
            "The kitchen opens at 16:30. It is rated 4.5 stars.",
            "It has 9 tables. It sits in Santa Barbara.",
        ],
        "label": [0, 1],
        "spans": [[], [{"start": 7, "end": 15}]],  # "9 tables" of row b's first sentence
    }
)


def test_a_number_is_swapped_for_another_number_of_the_same_context():
    text, kind = swap_value("The kitchen opens at 16:30.", CONTEXT, np.random.default_rng(0))
    assert kind == "number" and text != "The kitchen opens at 16:30."
    swapped = text.removeprefix("The kitchen opens at ").removesuffix(".")
    assert swapped in {"4.5", "21:00"}  # another value the context holds


def test_a_name_is_swapped_when_the_sentence_has_no_number():
    text, kind = swap_value("It sits in Santa Barbara.", CONTEXT, np.random.default_rng(0))
    assert kind == "name" and "Santa Barbara" not in text
    assert swap_value("It is nice.", CONTEXT, np.random.default_rng(0)) is None


def test_only_unmarked_sentences_are_changed_and_each_becomes_a_whole_sentence_positive():
    assert positive_sentences(ROWS) == 1
    made, card = synthetic_rows(ROWS, 10, seed=3)
    assert card["made"] == len(made) == 3  # row a's two sentences and row b's second
    assert card["sentences_tried_from"] == 3 and sum(card["by_swap"].values()) == 3
    assert made["label"].tolist() == [1, 1, 1]
    assert all(s == [{"start": 0, "end": len(a), "label_type": s[0]["label_type"]}]
               for s, a in zip(made["spans"], made["answer"], strict=True))  # fmt: skip
    assert all("~syn" in i for i in made["example_id"]) and set(made["group_id"]) == {"g1"}
    assert "9 tables" not in " ".join(made["answer"])  # a marked sentence is never a source
    again, _ = synthetic_rows(ROWS, 10, seed=3)
    assert again.equals(made)
    fewer, card = synthetic_rows(ROWS, 1, seed=3)
    assert len(fewer) == 1 and card["asked"] == 1
