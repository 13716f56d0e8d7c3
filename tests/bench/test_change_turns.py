"""bench.change_turns: its pairs load with their labels, and a change is read only in the
person's own statements."""

from __future__ import annotations

from bench.change_turns import load, says_a_change


def test_the_pairs_load_with_the_sets_own_change_labels() -> None:
    pairs = load()
    assert len(pairs) == 47
    assert sum(pair.ends for pair in pairs) == 7
    assert all(pair.said and pair.stored and pair.new for pair in pairs)


def test_a_change_is_read_in_the_persons_own_statements_only() -> None:
    assert says_a_change("I moved to Nairobi two weeks ago")
    assert says_a_change("the keto's done, lasted about 6 weeks")
    assert not says_a_change("have you moved the meeting?")  # a question
    assert not says_a_change('my sister wrote: "we moved to Leeds"')  # quoted, not theirs
    assert not says_a_change("I'm looking for an apartment in Utrecht")
