"""Factcheck-Bench loader: documented fields, label mapping, exclusions and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.data.factbench import COLLECTIONS, load_factbench
from runner.data.hri_claims import FRAME_COLUMNS, responses_from_frame
from runner.errors import ConfigError, DataError, DataNotFoundError


def fb_record(**over: object) -> dict:
    rec = {
        "prompt": "q?",
        "response": "a.",
        "response_label": False,
        "claims": ["c0", "c1", "c2"],
        "claim_labels": [True, False, "unknown"],
        "ability_to_test": "knowledge",
        "source": "felm-wk",
        "hallucination_spans": None,
    }
    rec.update(over)
    return rec


def sentence(
    n: int,
    stances: list[list[str]],
    gold: list,
    importance: list[str],
    worthy: list[str] | None = None,
) -> dict:
    return {
        "claims": [f"claim {n}.{k}" for k in range(n)],
        "claim_checkworthiness": worthy or ["factual"] * n,
        "claims_factuality_label": gold,
        "if_most_important_claim": importance,
        "stance_claim_autoEvid": stances,
        "auto_evidence": [[f"passage {k}"] * len(stances[k]) for k in range(n)],
    }


def tree_record(factuality: object = False) -> dict:
    return {
        "prompt": "who?",
        "response": "him.",
        "response_factuality": factuality,
        "revised_response": "her.",
        "sentences": {
            "sentence2": sentence(1, [["irrelevant"] * 5], [True], ["no"]),
            "sentence1": sentence(
                3,
                [
                    ["refute", "completely-support"],
                    ["partially-support", "irrelevant"],
                    ["completely-support"],
                ],
                [False, "unknown", True],
                ["yes", "intermediate", "no"],
            ),
            "sentence3": sentence(1, [[]], ["unknown"], ["no"], worthy=["opinion"]),
        },
    }


def write_folder(tmp_path: Path, fb: list[dict], tree: list[dict]) -> Path:
    (tmp_path / "Factbench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in fb))
    (tmp_path / "factcheck-GPT-benchmark.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in tree)
    )
    return tmp_path


def test_label_mapping_and_exclusions_on_small_files(tmp_path):
    folder = write_folder(
        tmp_path,
        [
            fb_record(),
            fb_record(claims=[], claim_labels=[], source="halueval-dolly15k"),
            fb_record(response_label=True, claim_labels=[True, True, True], source="factool-qa"),
        ],
        [tree_record(), tree_record("NA")],
    )
    data = load_factbench(str(folder))
    frame = data.frame
    assert list(frame.columns) == list(FRAME_COLUMNS)
    fb = frame[frame["task"] == "factbench"]
    assert fb["raw_label"].tolist()[:3] == ["SUPPORTED", "CONTRADICTED", "UNSUPPORTED"]
    assert fb["response_label"].tolist() == [1, 1, 1, 0, 0, 0]
    assert (fb["criticality"] == 1).all()
    assert data.info["excluded"]["factbench"] == {"no claims (halueval-dolly15k)": 1}

    gold = frame[frame["task"] == "factcheckgpt_gold"]
    stance = frame[frame["task"] == "factcheckgpt_stance"]
    # Sentences in numeric order; the opinion claim is excluded.
    assert gold["local_claim_id"].tolist() == ["s1c0", "s1c1", "s1c2", "s2c0"]
    assert gold["raw_label"].tolist() == ["CONTRADICTED", "UNSUPPORTED", "SUPPORTED", "SUPPORTED"]
    # Stance rule: refute > complete support > partial support > all irrelevant.
    assert stance["raw_label"].tolist() == ["CONTRADICTED", "PARTIAL", "SUPPORTED", "UNSUPPORTED"]
    assert gold["criticality"].tolist() == [3, 2, 1, 1]
    assert stance["passages"].tolist()[0] == ["passage 0", "passage 0"]
    assert data.info["excluded"]["factcheckgpt_stance"] == {
        "claim not check-worthy (opinion)": 1,
        "response_factuality NA": 1,
    }
    responses = responses_from_frame(frame)
    assert [r.response_id for r in responses] == [
        "factbench:1",
        "factbench:3",
        "factcheckgpt_gold:1",
        "factcheckgpt_stance:1",
    ]


def test_importance_mapping_is_configurable(tmp_path):
    folder = write_folder(tmp_path, [fb_record()], [tree_record()])
    data = load_factbench(
        str(folder),
        collections=["factcheckgpt_gold"],
        importance_criticality={"yes": 5, "intermediate": 1, "no": 1},
    )
    assert data.frame["criticality"].tolist() == [5, 1, 1, 1]


def test_fingerprint_depends_on_the_selection(tmp_path):
    folder = write_folder(tmp_path, [fb_record()], [tree_record()])
    a = load_factbench(str(folder))
    assert load_factbench(str(folder)).fingerprint == a.fingerprint
    assert load_factbench(str(folder), collections=["factbench"]).fingerprint != a.fingerprint


@pytest.mark.parametrize(
    ("fb", "message"),
    [
        (
            fb_record(claim_labels=[True, "maybe", False]),
            r"row 1, field 'claim_labels\[1\]': unexpected claim label 'maybe'",
        ),
        (fb_record(claim_labels=[True]), r"field 'claim_labels': 3 claims but 1 claim_labels"),
        (fb_record(response_label="yes"), r"field 'response_label': unexpected response label"),
        ({"prompt": "q"}, r"field 'source': missing field"),
    ],
)
def test_records_that_do_not_fit_name_file_line_and_field(tmp_path, fb, message):
    folder = write_folder(tmp_path, [fb], [tree_record()])
    with pytest.raises(DataError, match=message) as info:
        load_factbench(str(folder), collections=["factbench"])
    assert "Factbench.jsonl" in str(info.value)


def test_tree_records_that_do_not_fit_are_errors(tmp_path):
    bad = tree_record()
    bad["sentences"]["sentence1"]["if_most_important_claim"][0] = "very"
    folder = write_folder(tmp_path, [fb_record()], [bad])
    with pytest.raises(DataError, match=r"sentences\.sentence1\.if_most_important_claim\[0\]"):
        load_factbench(str(folder), collections=["factcheckgpt_gold"])
    bad = tree_record()
    bad["sentences"]["sentence1"]["stance_claim_autoEvid"][0] = ["refutes"]
    folder = write_folder(tmp_path, [fb_record()], [bad])
    with pytest.raises(DataError, match=r"unknown stance\(s\) \['refutes'\]"):
        load_factbench(str(folder), collections=["factcheckgpt_stance"])


def test_bad_selection_and_missing_data(tmp_path):
    with pytest.raises(ConfigError, match="unknown"):
        load_factbench(str(tmp_path), collections=["wice"])
    with pytest.raises(ConfigError, match="integer >= 1"):
        load_factbench(str(tmp_path), importance_criticality={"yes": 0})
    with pytest.raises(DataNotFoundError, match=r"github\.com/yuxiaw/Factcheck-GPT"):
        load_factbench(str(tmp_path / "missing"))
    with pytest.raises(DataNotFoundError, match=r"Factbench\.jsonl not found"):
        load_factbench(str(tmp_path))


@pytest.mark.slow
def test_real_factcheck_bench(data_dir):
    data = load_factbench(str(data_dir / "factcheck-bench"))
    info = data.info
    assert info["collections"] == list(COLLECTIONS)
    assert info["responses_per_collection"] == {
        "factbench": 326,
        "factcheckgpt_gold": 92,
        "factcheckgpt_stance": 92,
    }
    assert info["positives_per_collection"] == {
        "factbench": 180,
        "factcheckgpt_gold": 68,
        "factcheckgpt_stance": 68,
    }
    assert info["responses_per_source"]["factbench"] == {
        "factcheckgpt": 92,
        "factool-qa": 50,
        "felm-wk": 184,
    }
    assert info["excluded"]["factbench"] == {
        "no claims (factcheckgpt)": 2,
        "no claims (halueval-dolly15k)": 4507,
    }
    assert info["claims_per_collection"]["factcheckgpt_gold"] == 661
    first = data.frame[data.frame["response_id"] == "factbench:1"]
    # Line 1: claim_labels [true, false, true, true, true, true], response_label false.
    assert first["raw_label"].tolist() == ["SUPPORTED", "CONTRADICTED"] + ["SUPPORTED"] * 4
    assert first["response_label"].unique().tolist() == [1]
    assert set(data.frame["raw_label"]) == {"SUPPORTED", "PARTIAL", "UNSUPPORTED", "CONTRADICTED"}
