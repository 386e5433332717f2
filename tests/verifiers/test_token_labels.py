"""Gold spans -> token labels: LettuceDetect's convention, exact on real rows."""

from __future__ import annotations

import pytest
from tests.conftest import real_data_dir
from tests.routing.detector import minilm_dir

from runner.errors import DataError
from runner.verifiers.token_labels import (
    gold_spans,
    span_overlap_counts,
    token_labels,
)


def test_a_token_is_hallucinated_when_it_overlaps_a_span_by_one_character():
    offsets = [(0, 3), (4, 8), (8, 10), (11, 15)]
    assert token_labels(offsets, [(7, 9)]).tolist() == [0, 1, 1, 0]
    assert token_labels(offsets, [(3, 4)]).tolist() == [0, 0, 0, 0]  # the gap only
    assert token_labels(offsets, []).tolist() == [0, 0, 0, 0]


def test_gold_spans_read_ragtruth_records_and_refuse_bad_bounds():
    assert gold_spans([{"start": 5, "end": 9, "text": "x"}, (0, 2)], "0123456789") == [
        (0, 2),
        (5, 9),
    ]
    with pytest.raises(DataError, match="outside the answer"):
        gold_spans([{"start": 5, "end": 40}], "short", "r1")
    with pytest.raises(DataError, match="integer"):
        gold_spans([{"start": "5", "end": 9}], "0123456789", "r1")


def test_overlap_is_counted_in_characters():
    assert span_overlap_counts([(0, 8)], [(4, 12)]) == (4, 8, 8)


@pytest.mark.slow
def test_labels_are_exact_on_real_rows_with_multibyte_characters():
    """Every labelled token's characters intersect a gold span, every gold character that a
    token covers is labelled, on RAGTruth answers holding non-ASCII characters."""
    from transformers import AutoTokenizer

    from runner.data.ragtruth import load_ragtruth

    frame = load_ragtruth(split="train", data_dir=str(real_data_dir())).frame
    has_spans = frame["spans"].map(len) > 0
    multibyte = frame["answer"].map(lambda a: any(ord(c) > 127 for c in a))
    rows = frame[has_spans & multibyte].head(40)
    assert len(rows) >= 20
    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    for row in rows.itertuples():
        spans = gold_spans(list(row.spans), row.answer, row.example_id)
        enc = tokenizer(row.answer, add_special_tokens=False, return_offsets_mapping=True)
        offsets = [tuple(o) for o in enc["offset_mapping"]]
        labels = token_labels(offsets, spans)
        gold_chars = {c for a, b in spans for c in range(a, b)}
        for (s, e), label in zip(offsets, labels, strict=True):
            assert label == int(bool(gold_chars & set(range(s, e)))), (row.example_id, s, e)
        assert labels.sum() > 0
        # offsets index Python characters, so the span text is recovered exactly
        for record in row.spans:
            assert row.answer[record["start"] : record["end"]] == record["text"]
