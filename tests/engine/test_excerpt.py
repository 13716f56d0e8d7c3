"""What a result returns of a long text: the run of sentences that shares most of the query's
words, within the budget, grown with its neighbours; nothing cut when nothing matches."""

from __future__ import annotations

from memhub.engine.excerpt import excerpt

FILLER = [f"Paragraph {n} is about the weather in spring and nothing else." for n in range(20)]
ANSWER = "The restaurant I suggested was Osteria Francescana in Modena."
TEXT = " ".join([*FILLER[:10], ANSWER, *FILLER[10:]])


def test_a_text_that_fits_is_returned_whole() -> None:
    assert excerpt(ANSWER, "which restaurant?", len(ANSWER)) is None


def test_the_sentence_sharing_the_querys_words_is_kept_with_its_neighbours() -> None:
    span = excerpt(TEXT, "Which restaurant did you suggest in Modena?", 300)
    assert span is not None
    assert span.end - span.start <= 300
    kept = TEXT[span.start : span.end]
    assert ANSWER in kept
    assert kept != ANSWER  # the room left holds the sentences around it
    assert kept.startswith("Paragraph") and kept.endswith(".")  # whole sentences


def test_the_run_covering_most_query_words_wins_over_one_sentence_with_fewer() -> None:
    text = "Alpha beta. " * 30 + "Gamma delta epsilon. Zeta eta theta. " + "Alpha beta. " * 30
    span = excerpt(text, "gamma theta", 60)
    assert span is not None
    kept = text[span.start : span.end]
    assert "Gamma" in kept and "theta" in kept


def test_nothing_is_cut_when_no_sentence_shares_a_word_with_the_query() -> None:
    assert excerpt(TEXT, "quantum chromodynamics", 300) is None


def test_one_sentence_longer_than_the_budget_is_cut_around_its_first_match() -> None:
    text = "word " * 100 + "the target is here " + "word " * 100
    span = excerpt(text.strip(), "target", 100)
    assert span is not None and span.end - span.start <= 100
    kept = text[span.start : span.end]
    assert "target" in kept
    assert kept.startswith("word") and kept.endswith("word")  # cut at spaces
