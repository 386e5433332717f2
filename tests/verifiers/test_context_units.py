"""Evidence units that fit the context's form: a record's field facts, prose's sentences."""

from __future__ import annotations

import pytest

from runner.errors import ConfigError
from runner.verifiers.context_units import context_units, find_record, record_facts

RECORD = (
    "\n{'name': 'Apna Indian Kitchen', 'hours': {'Tuesday': '16:30-21:0'}, "
    "'attributes': {'RestaurantsReservations': True, 'WiFi': u'no', 'BusinessParking': "
    "\"{'garage': False, 'street': None}\", 'Music': None}, 'business_stars': 4.5, "
    "'review_info': [{'review_stars': 5.0, 'review_text': 'Tasty food. Great service.'}]}"
    "\nOverview:"
)


def test_a_record_becomes_one_fact_per_field_worded_like_an_answer():
    units, joiner = context_units(RECORD, unit_words=48, units="by_form")
    assert joiner == "; "
    assert units == [
        "name: Apna Indian Kitchen",
        "hours Tuesday: 16:30-21:0",
        "attributes Restaurants Reservations: yes",
        "attributes Wi Fi: no",
        "attributes Business Parking garage: no",  # a dict spelled inside a string
        "attributes Business Parking street: not given",
        "attributes Music: not given",
        "business stars: 4.5",
        "review info 1 review stars: 5.0",
        "review info 1 review text: Tasty food. Great service.",
        "Overview:",  # the text around the record stays, as prose
    ]


def test_a_long_field_value_is_cut_into_sentences_under_its_key():
    facts = record_facts({"review": "One two three. Four five six."}, unit_words=4)
    assert facts == ["review: One two three.", "review: Four five six."]


def test_a_list_of_scalars_is_one_fact():
    assert record_facts({"tags": ["a", True, None]}, unit_words=48) == ["tags: a, yes, not given"]


@pytest.mark.parametrize(
    "context",
    [
        "Paris is the capital of France. It has two million people.",
        "A brace { that opens and } closes is not a record.",
        "{'unclosed': 1",
        "{1, 2, 3}",  # a set literal, not a dict
    ],
)
def test_prose_and_what_does_not_parse_as_a_dict_are_split_into_sentences(context):
    by_form = context_units(context, unit_words=48, units="by_form")
    assert by_form == context_units(context, unit_words=48, units="sentences")
    assert find_record(context) is None


def test_sentences_are_the_units_every_earlier_detector_was_trained_with():
    context = "First sentence here. " + " ".join(["word"] * 10) + "."
    units, joiner = context_units(context, unit_words=4, units="sentences")
    assert joiner == " "
    assert units == ["First sentence here.", "word word word word", "word word word word",
                     "word word."]  # fmt: skip


def test_an_unknown_unit_name_is_refused():
    with pytest.raises(ConfigError, match="units 'facts'"):
        context_units("text", unit_words=4, units="facts")
