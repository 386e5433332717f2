"""Kept: a bounded map of derived values, least recently used dropped first."""

from runner.features.kept import Kept


def test_a_kept_value_is_not_built_again_and_the_oldest_goes_first():
    built = []
    kept: Kept[str] = Kept(2)

    def build(key):
        built.append(key)
        return key.upper()

    assert [kept.get(k, build) for k in ("a", "b", "a", "c", "a", "b")] == list("ABACAB")
    # "a" was used again before "c" came, so "b" was the oldest and went; "b" is rebuilt.
    assert built == ["a", "b", "c", "b"] and len(kept) == 2


def test_many_builds_the_missing_keys_in_one_call_and_returns_every_value():
    calls = []
    kept: Kept[int] = Kept(2)

    def build(keys):
        calls.append(list(keys))
        return [len(k) for k in keys]

    assert kept.many(["aa", "b", "aa"], build) == {"aa": 2, "b": 1}
    # More distinct keys than the limit: all come back, only the newest two are kept.
    assert kept.many(["b", "ccc", "dddd"], build) == {"b": 1, "ccc": 3, "dddd": 4}
    assert calls == [["aa", "b"], ["ccc", "dddd"]] and len(kept) == 2
    kept.clear()
    assert len(kept) == 0
