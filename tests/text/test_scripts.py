"""Which texts the lexical features can read (`runner.text.scripts`)."""

from __future__ import annotations

import random

import pytest

from runner.text import tokenize
from runner.text.scripts import unreadable_reason, unseen_letter_share


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("The sky is blue.", 0.0),
        ("Über die Größe", 0.25),
        ("数据", 1.0),
        ("Скутер стоит 454 доллара", 1.0),
        ("1,234 -- 56", 0.0),
    ],
)
def test_the_share_of_letters_the_tokeniser_drops(text, share):
    assert unseen_letter_share(text) == pytest.approx(share)


def test_cjk_text_is_flagged_and_the_tokeniser_is_unchanged():
    chinese = "德尔塔滑板车售价四百五十四美元"
    assert tokenize(chinese) == []  # the published tokeniser: no number may move
    assert unreadable_reason("The sky is blue.", chinese).startswith("unsupported script")
    assert unreadable_reason("Der Roller kostet 454 Dollar.", "Über die Größe") is None


def _share_by_definition(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for c in letters if not ("a" <= c.lower() <= "z" and c.isascii())) / len(letters)


def test_the_fast_count_equals_the_definition_letter_by_letter():
    # Kelvin sign and dotted I lowercase to ASCII; ² and Ⅻ are not letters; é composed
    # and decomposed; CJK; a ligature.
    rng = random.Random(0)
    alphabet = "aZ1 .é数Kßİ\u212a\u0130ﬁ²Ⅻ_日本\u0301\n"
    texts = ["".join(rng.choices(alphabet, k=rng.randint(0, 30))) for _ in range(3000)]
    for text in [*texts, "", "plain ASCII, 12 words.", "Über die Größe"]:
        assert repr(unseen_letter_share(text)) == repr(_share_by_definition(text)), text
