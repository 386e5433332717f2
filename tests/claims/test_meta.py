"""Meta-claims are found by their wording; ordinary world claims are not."""

from __future__ import annotations

import pytest

from runner.claims.meta import DEFAULT_PATTERNS, MetaClaimDetector

META = [
    "The passages do not mention a deadline for the appraisal.",
    "The documents state that options should be appraised.",
    "The provided context does not specify who approves the business case.",
    "According to the passages, the Green Book applies to all proposals.",
    "There is no mention of discount rates for health effects.",
    "The exact threshold is not specified.",
    "No information is given about the review cycle.",
    "The sources don't say whether the guidance is mandatory.",
    "The text says that risks must be recorded.",
]
WORLD = [
    "The Green Book is guidance issued by HM Treasury.",
    "In the context of the war, the city was evacuated.",
    "He was not included in the final squad.",
    "The company was not listed on the stock exchange until 1999.",
    "Options should be appraised against a counterfactual.",
    "The document was signed in 1648.",
]


@pytest.mark.parametrize("claim", META)
def test_claims_about_what_the_sources_say_are_meta_claims(claim):
    assert MetaClaimDetector().is_meta(claim)


@pytest.mark.parametrize("claim", WORLD)
def test_claims_about_the_world_are_not(claim):
    assert not MetaClaimDetector().is_meta(claim), MetaClaimDetector().match(claim)


def test_detect_returns_one_flag_per_claim():
    flags = MetaClaimDetector().detect([META[0], WORLD[0]])
    assert flags.tolist() == [True, False]


def test_patterns_are_configurable():
    custom = MetaClaimDetector(patterns=[r"\bthe green book says\b"])
    assert custom.is_meta("The Green Book says options must be costed.")
    assert not custom.is_meta(META[0])  # defaults replaced
    extended = MetaClaimDetector(extra_patterns=[r"\bthe green book says\b"])
    assert extended.is_meta("the Green Book says so") and extended.is_meta(META[0])
    assert extended.match(META[0]) in DEFAULT_PATTERNS


def test_bad_patterns_fail_loudly():
    with pytest.raises(ValueError, match="not a regex"):
        MetaClaimDetector(patterns=["(unclosed"])
    with pytest.raises(ValueError, match="at least one pattern"):
        MetaClaimDetector(patterns=[])
