"""Verdict parsing fails closed: only a JSON verdict with a known label is ever read."""

from __future__ import annotations

import pytest

from runner.claims.judges.parsing import json_objects, parse_verdict


@pytest.mark.parametrize(
    ("text", "label", "reasoning"),
    [
        ('{"verdict": "green"}', "green", ""),
        ('The passage states it.\n{"verdict": "red"}', "red", "The passage states it."),
        ('Reasoning...\n```json\n{"verdict": " Yellow "}\n```', "yellow", "Reasoning...\n```json"),
        (
            '{"reasoning": "Only part is stated.", "verdict": "yellow"}',
            "yellow",
            "Only part is stated.",
        ),
        (
            '{"verdict": "<green|yellow|red>"} Then: {"verdict": "green"}',
            "green",
            '{"verdict": "<green|yellow|red>"} Then:',
        ),
        ('{"note": 1} {"verdict": "red"} {"other": {"nested": true}}', "red", '{"note": 1}'),
    ],
)
def test_a_valid_verdict_is_read(text, label, reasoning):
    parsed = parse_verdict(text)
    assert parsed.ok and parsed.error is None
    assert parsed.label == label
    assert parsed.reasoning == reasoning


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('The claim is supported. {"verdict": "gre', "no JSON verdict"),  # truncated JSON
        ('{"verdict": "green"', "no JSON verdict"),  # unclosed object
        ("The passages clearly support the claim, so it is green.", "no JSON verdict"),
        ("", "no JSON verdict"),
        ('{"verdict": "supported"}', "unknown label"),
        ('{"verdict": "True"}', "unknown label"),
        ('{"verdict": true}', "unknown label"),
        ('{"verdict": ["green"]}', "unknown label"),
        ('{"label": "green"}', "no JSON verdict"),  # wrong key
        ('{"verdict": "green"} on second thought {"verdict": "red"}', "conflicting verdicts"),
        ('{"verdict": "green"} {"verdict": "maybe"}', "unknown label"),
    ],
)
def test_anything_else_is_a_failure_with_a_reason_never_a_label(text, reason):
    parsed = parse_verdict(text)
    assert not parsed.ok
    assert parsed.label is None
    assert reason in parsed.error


def test_non_text_is_a_failure():
    parsed = parse_verdict(None)  # type: ignore[arg-type]
    assert not parsed.ok and "not text" in parsed.error


def test_json_objects_finds_top_level_objects_in_order():
    text = 'a {"x": {"y": 1}} b {"z": 2} {broken'
    found = json_objects(text)
    assert [obj for _, _, obj in found] == [{"x": {"y": 1}}, {"z": 2}]
    start, end, _ = found[0]
    assert text[start:end] == '{"x": {"y": 1}}'
