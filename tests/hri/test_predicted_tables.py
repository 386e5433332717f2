"""Tables of the predicted-label study: which collections label the same claims."""

from __future__ import annotations

import pytest

from runner.data.base import LoadedData
from runner.data.hri_claims import responses_to_frame
from runner.data.hri_records import Claim, LabelAssignment, Response
from runner.errors import ConfigError, DataError
from runner.hri.predicted_tables import collection_responses


def resp(task: str, label: str, row: int, y: int | None) -> Response:
    claim = Claim(claim_id="s1c0", labels=(LabelAssignment(label),), file="f", row=row)
    return Response(f"{task}:{row}", (claim,), outcome=y, task=task, file="f", row=row)


def frame_of(rs: list[Response]) -> LoadedData:
    return LoadedData(name="t", frame=responses_to_frame(rs), files=[], fingerprint="x", info={})


def test_collections_labelling_the_same_claims_become_reference_rows():
    rs = [resp("gold", "SUPPORTED", 1, 0), resp("gold", "CONTRADICTED", 2, 1)]
    rs += [resp("stance", "PARTIAL", 1, 0), resp("stance", "SUPPORTED", 2, 1)]
    rs += [resp("other", "PARTIAL", 9, 0)]
    chosen, refs = collection_responses(frame_of(rs), "gold")
    assert [r.response_id for r in chosen] == ["gold:1", "gold:2"]
    assert list(refs) == ["gold", "stance"]
    assert [r.claims[0].label_names() for r in refs["stance"]] == [("PARTIAL",), ("SUPPORTED",)]


def test_an_unknown_collection_or_a_missing_outcome_is_an_error():
    with pytest.raises(ConfigError, match="collections: \\['gold'\\]"):
        collection_responses(frame_of([resp("gold", "SUPPORTED", 1, 0)]), "stance")
    with pytest.raises(DataError, match="has no outcome"):
        collection_responses(frame_of([resp("gold", "SUPPORTED", 1, None)]), "gold")
