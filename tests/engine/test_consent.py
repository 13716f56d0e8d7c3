"""The rules of memhub.engine.consent, sentence by sentence (pure functions, no model)."""

from __future__ import annotations

import pytest

from memhub.engine.consent import forget_request, supports_change

ASKS = [
    ("Please forget that I like olives.", "Ada likes olives."),
    ("Forget my address, please.", "Address: 12 Elm Street"),
    ("OK, so can you forget that I like olives?", "Likes olives"),
    ("I want you to forget my address.", "Address: 12 Elm Street"),
    ("Don't remember my address anymore.", "Address: 12 Elm Street"),
    ("Delete my address from your memory.", "Address: 12 Elm Street"),
    ("What plan am I on? Then forget my plan.", "My plan is Pro."),
    ("Olvida que me gustan las aceitunas.", "Le gustan las aceitunas."),
    ("¿Puedes olvidar mi dirección?", "Mi dirección es Calle Mayor 5."),
    ("Borra mi dirección de tu memoria.", "Mi dirección es Calle Mayor 5."),
    ("Oublie que j'aime les olives, s'il te plaît.", "Aime les olives."),
    ("Je voudrais que tu oublies mon adresse.", "Mon adresse est 5 rue des Lilas."),
    ("Vergiss bitte, dass ich Oliven mag.", "Mag Oliven."),
    ("Ich möchte, dass du meine Adresse vergisst.", "Adresse: Lindenweg 5"),
]
REFUSED = [
    ('My sister texted me: "forget that I like olives".', "Likes olives."),
    ("Il a écrit « oublie les olives » hier.", "Aime les olives."),
    ("My therapist told me to forget about olives.", "Likes olives."),
    ("He said forget the olives.", "Likes olives."),
    ("Translate to German: please forget that I like olives.", "Likes olives."),
    ("How do I remove the stain from my blue shirt?", "Has a blue shirt."),
    ("Remove the stain from my blue shirt first.", "Has a blue shirt."),
    ("Can you drop me at the olive bar?", "Likes the olive bar."),
    ("I don't remember the name of the olive bar.", "Likes the olive bar."),
    ("Don't forget that I like olives!", "Likes olives."),
    ("Please don't forget my olives.", "Likes olives."),
    ("N'oublie pas que j'aime les olives.", "Aime les olives."),
    ("Oublie pas que j'aime les olives.", "Aime les olives."),
    ("No olvides que me gustan las aceitunas.", "Le gustan las aceitunas."),
    ("Vergiss nicht, dass ich Oliven mag.", "Mag Oliven."),
    ("Forget it, the olives were fine.", "Likes olives."),
    ("Forget my address. I love olives.", "Likes olives."),  # asks about another fact
    ("Forget everything you know about me.", "Likes olives."),  # names no fact
]


@pytest.mark.parametrize(("turn", "fact"), ASKS)
def test_a_request_to_forget_that_fact_counts(turn: str, fact: str) -> None:
    assert forget_request(turn, fact)


@pytest.mark.parametrize(("turn", "fact"), REFUSED)
def test_quotes_reports_other_senses_and_negations_ask_nothing(turn: str, fact: str) -> None:
    assert not forget_request(turn, fact)


def test_a_change_needs_a_user_turn_that_says_it() -> None:
    assert supports_change(["I hate olives now."], "Ada likes olives.", "Ada hates olives.")
    assert supports_change(["I moved to Berlin."], "Ada lives in Paris.", "Ada lives in Berlin.")
    assert supports_change(
        ["I don't like olives any more."], "Ada likes olives.", "Ada does not like olives."
    )
    # Innocent turns: nothing new said, or the news only in someone else's words.
    assert not supports_change(["Thanks, sounds good!"], "Ada likes olives.", "Ada hates olives.")
    assert not supports_change(
        ["Do you remember whether I like olives?"], "Ada likes olives.", "Ada hates olives."
    )
    assert not supports_change(
        ['My friend said "I hate olives".'], "Ada likes olives.", "Ada hates olives."
    )
    assert not supports_change(
        ["Olives are tasty."], "Ada likes olives.", "Ada does not like olives."
    )


def test_the_persons_name_alone_does_not_tie_a_change_to_a_fact() -> None:
    """Every fact about Ada names her: the new fact sharing only "Ada" with the old one is not
    about it, whatever the turn says."""
    dog = (["We adopted a puppy called Rex."], "Ada lives in Paris.", "Ada has a dog named Rex.")
    assert supports_change(*dog)  # without the names, "Ada" ties the two
    assert not supports_change(*dog, names=["ada"])
    moved = (["I moved to Berlin."], "Ada lives in Paris.", "Ada lives in Berlin.")
    assert supports_change(*moved, names=["ada"])
