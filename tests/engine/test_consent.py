"""The rules of memhub.engine.consent, sentence by sentence (pure functions, no model)."""

from __future__ import annotations

import pytest

from memhub.engine.change_support import supports_change
from memhub.engine.consent import (
    asks_to_forget,
    drawn_from_a_request,
    facts_clearly_asked,
    facts_tied_by_a_word,
    forget_request,
    forget_requests_naming_no_fact,
    in_another_language,
    keeps,
    request_object,
)

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


# --- Issue 35, item 5: pasted text, negation in the clause, accents, indirect requests -------

PASTED = [  # someone else's words inside the user's turn: each would ask, said by the user
    ("> Please forget that I like olives.\nWhat do you make of this?", "Likes olives."),
    ("---------- Forwarded message ---------\nPlease forget that I like olives.", "Likes olives."),
    ("Begin forwarded message:\n\nForget that I like olives, thanks!", "Likes olives."),
    ("From: tom@example.com\nSubject: hi\n\nPlease forget that I like olives.", "Likes olives."),
    ("```\nforget that I like olives\n```\nWhy does this script print nothing?", "Likes olives."),
    ("My friend wrote: please forget that I like olives", "Likes olives."),
    ("Here is what my sister said. Forget that I like olives!", "Likes olives."),
    ("Summarise this for me. Please forget that I like olives.", "Likes olives."),
    ("Please forget that I like olives. Translate that into German.", "Likes olives."),
    ("Tom: forget that Ada likes olives\nMe: ok", "Ada likes olives."),
    ("[10:32] Mum: forget the olives, I like them", "Likes olives."),
    ("Forget that I like olives, my boss said", "Likes olives."),
    ("“Please forget that I like olives,” she texted.", "Likes olives."),
    ('He typed "forget that I like olives\nand then deleted it', "Likes olives."),
    ("Le message de Paul : oublie que j'aime les olives", "Aime les olives."),
    (
        "---------- Weitergeleitete Nachricht ----------\nVergiss, dass ich Oliven mag.",
        "Mag Oliven.",
    ),
]
NEGATED = [  # a negation anywhere in the request's clause, or the fact in another part
    ("Vergiss meine Oliven nicht.", "Mag Oliven."),
    ("Vergiss das bitte nicht: ich mag Oliven.", "Mag Oliven."),
    ("N'oublie jamais que j'aime les olives.", "Aime les olives."),
    ("Ne l'oublie pas, j'adore les olives.", "Adore les olives."),
    ("No te olvides nunca de que me gustan las aceitunas.", "Le gustan las aceitunas."),
    ("Forget my old phone number, but don't forget that I like olives.", "Likes olives."),
    ("Forget about my gym, I still like olives.", "Likes olives."),
    ("Forget the shirt thing, olives I still like.", "Likes olives."),
    (
        "Olvida lo de mi trabajo pero no olvides que me gustan las aceitunas.",
        "Le gustan aceitunas.",
    ),
    ("Oublie mon ancien numéro mais pas que j'aime les olives.", "Aime les olives."),
    ("Vergiss meine alte Nummer, aber nicht, dass ich Oliven mag.", "Mag Oliven."),
    ("I don't want you to forget that I like olives.", "Likes olives."),
    ("I hope you never forget that I like olives.", "Likes olives."),
    ("Forget I like olives? Never!", "Likes olives."),
    ("You forgot that I like olives.", "Likes olives."),
    ("You keep forgetting that I like olives!", "Likes olives."),
    ("Don't you remember that I like olives?", "Likes olives."),
    ("I don't remember if I like olives.", "Likes olives."),
    ("Remember that I like olives, forget nothing.", "Likes olives."),
    # a broad verb about something else than memory, a wish about other things, a negated one
    ("Scrap the olives from the recipe, keep it simple.", "Likes olives."),
    ("I'd rather the olives weren't kept in the fridge.", "Likes olives."),
    ("Don't scrap anything you know about my olives.", "Likes olives."),
]
INDIRECT = [  # requests as people word them, and words compared without accents
    ("I'd rather you didn't remember where I work anymore.", "Ada works at Acme."),
    ("That thing about me living in Paris, please forget it.", "Ada lives in Paris."),
    ("You don't need to remember my address any more.", "Ada's address is 12 Elm Street."),
    ("Stop remembering my birthday, please.", "Ada's birthday is on 3 May."),
    ("Please don't keep my phone number.", "Ada's phone number is 555-0199."),
    ("No need to remember my salary.", "Ada's salary is 50k."),
    ("I'd prefer you forgot about my divorce.", "Ada got divorced in 2020."),
    ("My phone number, the old one: could you forget it?", "Ada's phone number is 555-0199."),
    ("Forget that I don't eat meat.", "Ada doesn't eat meat."),
    ("Forget my old job, but don't forget that I live in Oslo.", "Ada has a job at the bank."),
    ("Oublie que je suis végétarien.", "Ada is vegetarian."),
    ("Olvida que soy vegetariana.", "Ada is vegetarian."),
    ("No recuerdes dónde trabajo, por favor.", "Ada trabaja en Acme."),
    ("Ne retiens plus mon adresse.", "L'adresse d'Ada est 5 rue des Lilas."),
    ("Je préférerais que tu oublies mon ancien travail.", "Ada travaille chez Airbus."),
    ("Merk dir meine Adresse bitte nicht mehr.", "Adas Adresse ist Lindenweg 5."),
    ("Du musst dir nicht mehr merken, wo ich arbeite.", "Ada arbeitet bei Siemens."),
    ("Vergiss bitte, dass ich kein Fleisch esse.", "Ada isst kein Fleisch."),
    ("Please forget my address and where I work.", "Ada works at Acme."),
    ("As I said, forget my old address.", "Ada's address is 12 Elm Street."),
    # a question that asks not to keep, and a change of mind before the request, not after it
    ("Could you not keep my old address around?", "Ada's address is 12 Elm Street."),
    ("Can you please not store where I work?", "Ada works at Acme."),
    ("On second thought, I'd rather you didn't hold on to my salary.", "Ada's salary is 50k."),
    # the request names what comes before it, not its own verb ("kept") or a polite "if
    # that's ok"; a broad verb ("scrap", "ditch") beside what the assistant keeps or stores
    (
        "Hmm, that bit about my overdraft, I'd rather it wasn't kept if that's ok.",
        "Ada has an overdraft.",
    ),
    ("Scrap my gym's name from whatever you keep.", "Ada trains at the Iron Temple gym."),
    (
        "Oh, and ditch the part about where I live, I'd rather that wasn't stored.",
        "Ada lives in Leeds.",
    ),
    # a thing said before, named by a pronoun, not wanted kept or had saved (heldout15's x07
    # and x10, read after their runs)
    (
        "Eh the salary number I told you last time, can delete or not? Don't want it kept"
        " anywhere. Shy lah.",
        "Ada's current salary is RM6,800.",
    ),
    ("The therapy thing I mentioned. I'd rather not have that saved anywhere.", "Ada has therapy."),
]


@pytest.mark.parametrize(("turn", "fact"), PASTED)
def test_pasted_forwarded_and_quoted_requests_are_not_the_users(turn: str, fact: str) -> None:
    assert not forget_request(turn, fact)
    # the same request in the person's own words counts: the marker is what refuses it
    assert forget_request("Please forget that I like olives.", "Likes olives.")


@pytest.mark.parametrize(("turn", "fact"), NEGATED)
def test_a_negation_in_the_clause_or_the_fact_in_another_part_asks_nothing(
    turn: str, fact: str
) -> None:
    assert not forget_request(turn, fact)


@pytest.mark.parametrize(("turn", "fact"), INDIRECT)
def test_indirect_requests_and_accents_count(turn: str, fact: str) -> None:
    assert forget_request(turn, fact)


def test_the_users_own_words_before_a_pasted_part_still_count() -> None:
    turn = "Please forget that I like olives.\nMy friend wrote: I love figs"
    assert forget_request(turn, "Likes olives.")
    assert not forget_request("Please forget it.\nMy friend wrote: I love figs", "Likes figs.")


def test_a_request_is_tied_to_the_fact_by_its_own_part_of_the_sentence() -> None:
    turn = "Forget my old job, but don't forget that I live in Oslo."
    assert forget_request(turn, "Ada has a job at the bank.")
    assert not forget_request(turn, "Ada lives in Oslo.")
    # a plain list after the request continues it; a statement or a contrast does not
    assert forget_request("Forget that I like olives, figs and plums.", "Likes plums.")
    assert not forget_request("Forget that I like olives, I live in Oslo.", "Lives in Oslo.")
    assert not forget_request("Forget my job except that I live in Oslo.", "Lives in Oslo.")
    # "forget it" alone is "never mind": it reaches back only when asked for ("please", "can
    # you"), and a clause after it is not its object
    assert not forget_request("The olives were fine, forget it.", "Likes olives.")
    assert not forget_request("Forget it, the olives were fine.", "Likes olives.")
    assert forget_request("The olives, please forget them.", "Likes olives.")


def test_a_requests_words_about_its_own_telling_name_nothing() -> None:
    """heldout2's k05: "gave" tied "the salary figure I gave you" to "The user's boss gave a
    meeting", so the request named a fact by a word and was never tied by meaning."""
    facts = ["The user's boss gave a meeting on 2023-03-01.", "The user is currently on 48k."]
    for turn in [
        "Please forget the salary figure I gave you.",
        "forget the salary figure i told u about",
        "Please forget the salary figure I've mentioned to you.",
    ]:
        assert forget_requests_naming_no_fact(turn, facts), turn
        assert not forget_request(turn, facts[0]), turn
    # what is told stays: "forget that I gave you my address" names the address
    assert forget_request("Forget my address, the one I gave you.", "Ada's address is 5 Elm St.")


def test_a_request_taken_back_later_in_the_turn_asks_nothing() -> None:
    address = "Address: 12 Elm Street"
    assert not forget_request("Forget my address. Actually no, don't.", address)
    assert not forget_request("Forget my address. Wait, no!", address)
    assert not forget_request("forget my address lol jk", address)
    assert not forget_request("Vergiss meine Adresse. Nein, doch nicht.", "Adresse: Lindenweg 5")
    # a "no" before the request, a question after it, or a "do it" do not take it back
    assert forget_request("No, forget my address.", address)
    assert forget_request("Forget my address. Ok?", address)
    assert forget_request("Forget my address, do it now.", address)
    assert forget_request("Can you forget my address? I don't need it any more.", address)


def test_questions_that_are_not_asking_not_to_keep() -> None:
    address = "Ada's address is 12 Elm Street."
    assert not forget_request("Couldn't you keep my address?", address)  # asks to keep it
    assert not forget_request("Could you not keep asking about my address?", address)
    assert not forget_request("Why could you not keep my address?", address)
    assert not forget_request("Don't you remember my address?", address)
    assert not forget_request("Could you not keep my address? Just kidding.", address)
    assert not forget_request("Forget my address. On second thought, don't.", address)


def test_a_negation_in_the_reason_before_a_keep_is_not_the_requests() -> None:
    """heldout7's r11: "I am not very good with technology so please keep things simple" was
    read as "please don't keep", and the turn's facts were refused as asked to be forgotten."""
    tech = "Gerald is not very good with technology."
    simple = "I am not very good with technology so please keep things simple."
    assert not forget_request(simple, tech)
    reminders = "Ada wants reminders in the evening."
    assert not forget_request("I'm not a morning person, so keep my reminders late.", reminders)
    # a negation after the reason is the request's, in each language the rules read
    address = "Ada's address is 12 Elm Street."
    assert forget_request("I'm not sure about it, so please don't keep my address.", address)
    assert forget_request("ich bin nicht sicher, also merk dir meine Adresse bitte nicht", address)
    direccion = "La dirección de Ada es Calle Olmo 12."
    assert forget_request("no estoy segura, así que no guardes mi dirección", direccion)


def test_a_broad_verbs_memory_word_may_stand_in_the_next_sentence() -> None:
    """heldout7's r08: "can you drop the money stuff i told you before? feels weird having it
    stored" asked nothing, its memory word being in the next sentence."""
    income = "The user's money: a take-home of 2,300 a month."
    asked = "can you drop the money stuff i told you before? feels weird having it stored."
    assert forget_request(asked, income)
    assert forget_request("Drop the money stuff. I'd rather it wasn't kept.", income)
    # only a word that something is stored counts there, not any word of memory or keeping
    kids = "Ada's kids are at Elm school."
    assert not forget_request("can you drop the kids at school? you remember everything", kids)
    assert not forget_request("can you drop the kids at school? I kept the receipt", kids)


def test_facts_one_word_ties_are_left_to_the_model() -> None:
    """heldout7's r03: "my weight and the gym times" names each of three facts by one word;
    none is clearly asked, all three are tied (and put to the model one by one)."""
    facts = [
        "The user weighs 84 kg right now.",
        "The user's goal is to weigh 78 kg by summer.",
        "The user goes to the gym mon/wed/fri at 6:30am.",
        "The user is running the Leiden half marathon in October.",
    ]
    said = "thx. and pls forget my weight and the gym times, but do keep that im running the Leiden"
    assert facts_clearly_asked(said, facts) == []
    # with the request's own words, which the model is asked about
    assert facts_tied_by_a_word(said, facts) == [
        ("and pls forget my weight, and the gym times", [0, 1, 2])
    ]
    likes = ["Ada likes figs.", "Ada likes olives.", "Ada likes dates.", "Ada likes plums."]
    what = "Please forget what I like."
    assert facts_tied_by_a_word(what, likes) == []  # a word too common
    assert facts_tied_by_a_word(what, likes[:3]) == [("please forget what i like", [0, 1, 2])]
    assert facts_tied_by_a_word("Please forget that I like olives.", likes) == []  # clear


def test_the_other_facts_holding_a_person_a_request_names_are_left_to_the_model() -> None:
    """heldout10's r08 (read after its runs): "the part about Mark and the money" names the
    money lent by two words, and Mark's job loss by his name alone: the first is clearly
    asked, the second is put to the model. A word shared that is no name asks nothing more."""
    said = "One more thing. The part about Mark and the money, please don't keep that."
    facts = [
        "The user has been lending Mark money to cover his mortgage.",
        "The user's son Mark lost his job at the tire plant in January.",
        "The user booked ten days in Switzerland.",
    ]
    assert facts_clearly_asked(said, facts) == [0]
    assert facts_tied_by_a_word(said, facts) == [("the part about mark, and the money", [1])]
    money = ["The user lends money to their son.", "The user saves money for a trip."]
    assert facts_tied_by_a_word("Please forget the money I lend to my son.", money) == []
    # a capital at the start of a line is no name ("Money" names no one)
    lines = "hi\nMoney is tight this month\nplease forget the money I lend to my son"
    assert facts_tied_by_a_word(lines, money) == []


def test_a_request_naming_a_person_and_nothing_else_asks_for_each_of_their_facts() -> None:
    """heldout9's q08 (read after its runs): "About Kamau, please don't keep that information"
    names Kamau alone, so each fact holding his name is asked, without the model (the 1.5B
    said no to all three); a fact not holding it is not, and a request naming the person and
    something more still names the facts holding both (test above). Written without a
    capital, the name is still the one word of the request the facts hold (next test)."""
    said = "About Kamau, please don't keep that information. It is family business."
    facts = [
        "The user's brother Kamau is drinking too much.",
        "The user's brother Kamau lost his job at the flower farm.",
        "The user keeps four dairy cows at their shamba in Subukia.",
    ]
    assert facts_clearly_asked(said, facts) == [0, 1]
    assert facts_clearly_asked(said.lower(), facts) == [0, 1]


def test_a_request_whose_one_held_word_ties_a_few_facts_asks_for_each() -> None:
    """heldout19's z02 (read after its runs): "that bit about my ex earlier, scrap it" names
    one word any fact holds, "ex", and both facts about the ex hold it; put to the model's
    question, both stayed in one run. A request naming one thing by one word asks for
    the few facts holding it (a wrong one is a retire in the person's review list, undone in
    one step). Two of the request's words held by different facts, or more facts than
    ``TIED_AT_MOST`` holding the word, stay the model's question."""
    said = "oh and that bit about my ex earlier, scrap it, dont want him anywhere near my life"
    facts = [
        "The user's ex Declan was a nightmare.",
        "The user met Callum at a pub quiz.",
        "The user's ex Declan used to read all their texts.",
    ]
    assert facts_clearly_asked(said, facts) == [0, 2]
    weights = ["The user weighs 84 kg.", "The user aims to weigh 78 kg.", "The user is a nurse."]
    assert facts_clearly_asked("pls forget my weight", weights) == [0, 1]
    two_things = "please forget the salary and the bonus"
    pay = ["The user's salary is 48k.", "The user's bonus was 3k.", "The user lives in Leeds."]
    assert facts_clearly_asked(two_things, pay) == []
    assert [facts for _, facts in facts_tied_by_a_word(two_things, pay)] == [[0, 1]]
    likes = [f"The user likes {thing}." for thing in ("olives", "jazz", "rain", "chess")]
    assert facts_clearly_asked("forget what I like", likes) == []


def test_what_a_request_asks_is_the_words_after_its_verb() -> None:
    """What the embedder compares beside the request as said (engine/forgetting.meant)."""
    assert request_object("2) i'd rather you didn't keep where i work, just in case") == (
        "where i work, just in case"
    )
    assert request_object("Please forget the salary figure I gave you.") == "the salary figure"
    # nothing after the verb, or nothing but a telling: the request as it is
    assert request_object("that thing about me living in Paris") == (
        "that thing about me living in Paris"
    )
    assert request_object("I'd rather that wasn't stored.") == "I'd rather that wasn't stored."


def test_requests_as_people_text_them() -> None:
    """heldout8's s10, s01, s04 and s11 (read after their blind run): "can u", an "eigentlich"
    or a "wait" before the verb, and someone's view reported after the request ("wife says
    ...") each hid a request; the report after it is still not the person's."""
    school = "The user's kids go to Maple Grove school."
    said = "also hey can u not remember the school name i gave u, wife says we shouldnt put it out"
    assert forget_request(said, school)
    speeding = "The user got a speeding ticket."
    said = "also can u forget the speeding thing i told u about, its getting sorted"
    assert forget_request(said, speeding)
    assert not forget_request(said, "The user is getting a sorted drawer.")  # not its words
    adresse = "Meine Adresse ist Karl-Heine-Straße 40."
    assert forget_request("eigentlich vergiss bitte meine adresse wieder", adresse)
    priya = "The user's friend Priya is pregnant."
    assert forget_request("wait actually forget i said that about priya", priya)
    # what a report after the request says is someone else's; a report ending it takes it all
    olives = "Ada likes olives."
    assert not forget_request("my boss says forget that I like olives", olives)
    assert not forget_request("forget that I like olives, my boss said", olives)
    assert forget_request("please forget that I like olives, my boss says it's risky", olives)


def test_a_fact_drawn_from_a_request_alone() -> None:
    said = "outside all day. also can u forget the speeding thing i told u about, its sorted"
    assert drawn_from_a_request(said, "The user is the one who said the speeding thing.")
    assert drawn_from_a_request(said, "The user got a speeding ticket.")  # the thing again
    assert not drawn_from_a_request(said, "The user was outside all day.")
    new_job = "forget my old job, I'm at Shopify now"
    assert not drawn_from_a_request(new_job, "The user has a new job at Shopify.")
    assert not drawn_from_a_request("I'm at Shopify now", "The user works at Shopify.")


def test_reproaches_rhetorical_questions_and_labels() -> None:
    assert not forget_request("Why would you forget that I like olives?", "Likes olives.")
    assert not forget_request("Forget my job, Oslo stays.", "Lives in Oslo.")
    assert not forget_request("Forget my job and Oslo is where I live.", "Lives in Oslo.")
    # the person's own labels and a request's object after a colon count
    assert forget_request("PS: forget that I like olives", "Likes olives.")
    assert forget_request("Please forget this: I like olives.", "Likes olives.")
    assert forget_request("Mon adresse, oublie-la s'il te plaît.", "Mon adresse: 5 rue des Lilas.")


def test_letters_passives_and_quoted_speech_of_the_person_are_not_requests() -> None:
    olives = "Ada likes olives."
    assert not forget_request("Dear Ada,\nplease forget that you like olives.\nTom", olives)
    assert not forget_request("please forget that you like olives.\nLove,\nMum", olives)
    assert not forget_request("I was told: forget that I like olives", olives)
    assert not forget_request("I was told to forget that I like olives", olives)
    assert not forget_request("I said to my sister: forget that you like olives", olives)
    # a closing without a name, and the person's own report of what they said, are theirs
    assert forget_request("Please forget that I like olives.\nCheers!", olives)
    assert forget_request("Forget what I said about olives", olives)


def test_other_senses_tags_and_afterthoughts() -> None:
    address = "Address: 12 Elm Street"
    assert not forget_request("I don't want you to keep asking about my address.", address)
    assert not forget_request("Forget my address — or not.", address)
    assert forget_request("Forget my address or my phone.", address)
    assert forget_request("Forget my address, will you?", address)  # the tag asks, not the verb
    assert forget_request("Don't remember my address, ok?", address)


@pytest.mark.parametrize(
    "turn",
    [
        "She wrote „forget that I like olives“ on the card.",
        "The card: «forget that I like olives».",
        "The card read ‘forget that I like olives’.",
        "Why does `forget that I like olives` print nothing?",
        "Von: tom@example.com\nBetreff: hi\nForget that I like olives.",
        "Objet : salut\nForget that I like olives.",
        "Paul's message: forget that I like olives",
        "Reply to this for me: please forget that I like olives.",
    ],
)
def test_quote_marks_code_headers_and_tasks_of_every_kind(turn: str) -> None:
    assert not forget_request(turn, "Ada likes olives.")


def test_words_meet_across_accents_and_doubled_letters_only() -> None:
    assert forget_request("Vergiss meine Adresse.", "Ada's address is 12 Elm Street.")
    assert forget_request("Oublie que je suis VÉGÉTARIEN.", "Ada is vegetarian.")
    assert not forget_request("Vergiss, dass ich Oliven mag.", "Ada likes olives.")


def test_what_the_rules_still_get_wrong() -> None:
    """The mistakes docs/consolidation.md owns up to, pinned so that a change to them shows.
    What gets through is retired or closed, and restore undoes it."""
    # refused though meant: a request beside a task, a label that looks like a speaker's
    assert not forget_request("Please forget my address. Translate 'hi' too.", "Address: Elm")
    assert not forget_request("Note: forget that I like olives", "Ada likes olives.")
    # let through though not meant: a word shared with the wrong fact, a plain clause after
    # the request, a statement naming the new place
    assert forget_request("Forget that I live in Paris.", "Ada lives in Oslo.")
    assert forget_request("Forget my job, Oslo trips.", "Ada likes Oslo trips.")
    assert supports_change(
        ["I moved the meeting to Berlin."], "Ada lives in Paris.", "Ada lives in Berlin."
    )
    assert supports_change(
        ["I live in Paris. It is lovely in Berlin."], "Ada lives in Paris.", "Ada lives in Berlin."
    )
    # a change said plainly closes the fact the model chose, of the same relation
    assert supports_change(["I love Berlin now."], "Ada lives in Oslo.", "Ada lives in Berlin.")
    # refused though meant: another relation in the new fact, a possessive as the only person
    assert not supports_change(
        ["I switched careers: these days I teach maths."],
        "The user works as a pharmacist.",
        "The user teaches maths.",
    )
    assert not supports_change(
        ["My new job at Shopify starts Monday."],
        "The user is a barista.",
        "The user is a developer at Shopify.",
    )


def test_the_person_saying_what_they_should_not_have_said_speaks_for_themselves() -> None:
    """heldout19's z05 (read after its blind runs): "I shouldn't have said that" is the
    person's own words, two words between "I" and the verb; "I think she said" is another's."""
    ivf = "The user's pal Siobhán is going through IVF at the moment."
    said = (
        "actually the IVF thing about Siobhán, I shouldn't have said that, it's her business."
        " please don't keep it"
    )
    assert forget_request(said, ivf)
    assert not forget_request("I think she said forget the IVF thing", ivf)
    assert not forget_request("I was told to forget the IVF thing", ivf)


def test_the_person_reporting_their_own_request_asks() -> None:
    assert forget_request("Je te demande d'oublier mon adresse.", "Mon adresse: 5 rue des Lilas.")
    assert not forget_request("Il demande d'oublier mon adresse.", "Mon adresse: 5 rue des Lilas.")


def test_a_message_signed_by_someone_else_is_a_letter() -> None:
    olives = "Ada likes olives."
    assert not forget_request("Hi Ada, please forget that you like olives. Thanks, Tom", olives)
    assert not forget_request("Please forget that you like olives.\nCheers,\nTom", olives)
    assert forget_request("Please forget that I like olives. Thanks!", olives)  # no signature


# --- Issue 35: changes of fact said plainly, though not in the old fact's words --------------


@pytest.mark.parametrize(
    ("said", "fact"),
    [
        ("what I told you about my meds, forget it", "The user takes meds for blood pressure."),
        ("lo que te conté de mis pastillas, olvídalo", "Toma pastillas para la tensión."),
        (
            "ce que je vous ai raconté sur mes médicaments, oubliez ça, ça ne regarde personne.",
            "Bernard prend des médicaments pour la tension.",
        ),
        ("was ich dir über meine Tabletten erzählt habe, vergiss das", "Sie nimmt Tabletten."),
        # said earlier in the chat (heldout19's z02, read after its blind runs)
        (
            "oh and that bit about my ex earlier, scrap it, dont want him near my life",
            "The user's ex Declan used to read all their texts.",
        ),
    ],
)
def test_what_the_person_told_the_assistant_then_forget_it_names_what_was_told(
    said: str, fact: str
) -> None:
    """heldout10's r05 (read after its runs): "oubliez ça" after what the person told the
    assistant means what was told. A bare "forget it" after a thing alone may be "never
    mind" ("the parking thing, forget it, I'll sort it myself") and asks nothing."""
    assert forget_request(said, fact)
    assert not forget_request("the parking thing, forget it, I'll sort it", "The user parks.")
    assert not forget_request("the parking thing, scrap it, I'll sort it", "The user parks.")


def test_a_heading_is_the_persons_and_a_speakers_label_is_not() -> None:
    """Several words, the later in lower case, head the person's own line; a name (one word,
    or capitalised throughout) or a label opening with "my"/"the" is a speaker's."""
    olives = "Ada likes olives."
    assert forget_request("Quick favour: please forget that I like olives.", olives)
    assert not forget_request("Tom Berg: please forget that I like olives.", olives)
    assert not forget_request("My sister: please forget that I like olives.", olives)
    assert not forget_request("The boss: please forget that I like olives.", olives)
    # French puts a space before a colon; a chat's speaker label never has one
    pills = "Bernard prend des médicaments pour la tension."
    said = (
        "Nouvelles de Lyon : on a adopté un chaton. Autre chose : ce que je vous ai raconté sur"
        " mes médicaments, oubliez ça, ça ne regarde personne."
    )
    assert forget_request(said, pills)
    assert not forget_request("Bernard: oubliez mes médicaments, ça ne regarde personne.", pills)


def test_a_request_naming_nothing_means_the_nearest_earlier_part_of_the_turn_naming_a_fact() -> (
    None
):
    """heldout6's q06 and q09 (read after its run): a PIN said and taken back in one turn; a
    raise "scratched", then "kinda gutted. don't keep that"."""
    pin = (
        "oh and my pin for the banking app is 4471, can you remember that for me? actually no "
        "wait, forget that, terrible idea, don't keep it"
    )
    facts = ["The user uses Strava on morning runs.", "The user's PIN for the banking app is 4471."]
    assert facts_clearly_asked(pin, facts) == [1]
    assert forget_request(pin, facts[1]) and not forget_request(pin, facts[0])
    raised = (
        "ok scratch what I said about the raise, there's a budget freeze and it's not "
        "happening. kinda gutted. don't keep that"
    )
    money = ["The user is a data analyst at the council.", "The user is getting a raise to 48k."]
    assert facts_clearly_asked(raised, money) == [1]
    # the nearest part that names a fact, not all the turn said before
    home_pin = ["Ada lives in Oslo.", "Ada's PIN is 4471."]
    assert facts_clearly_asked("I live in Oslo. My PIN is 4471. Don't keep that.", home_pin) == [1]
    assert facts_clearly_asked("I live in Oslo. Please don't keep that.", home_pin) == [0]


# heldout9's requests to forget (read after its blind runs), none of which was read as one:
# broad verbs people use ("scrub", "bin", "leave ... out of"), a memory word as people say it
# ("whatever you've got", "from before", "the thing about"), Pidgin's "abeg", Taglish.
HELDOUT9 = [
    (
        "And leave Lorraine's wrist out of whatever you keep. She's a private person.",
        "The user's wife Lorraine broke her wrist.",
    ),
    (
        "hey can you scrub that Rakesh thing from before? we talked it out, it's fine now",
        "The user's manager Rakesh presented their redesign as his own work.",
    ),
    (
        "oh and that address from before, you can bin it, don't need it kept anywhere",
        "The user's address is 14 Craigpark Drive, Dennistoun, Glasgow.",
    ),
    (
        "omg please delete the thing about Salma and her test, if she ever found out",
        "The user's sister Salma failed her driving test four times.",
    ),
    (
        "Abeg clear everything about Tolu from your memory, I'm moving on",
        "The user and his babe Tolu plan to move to Canada in 2025.",
    ),
]


@pytest.mark.parametrize(("said", "fact"), HELDOUT9)
def test_requests_with_broad_verbs_as_people_say_them(said: str, fact: str) -> None:
    assert forget_request(said, fact)


def test_a_broad_verb_about_something_else_asks_nothing() -> None:
    for said in (
        "can you remove the onions from the recipe?",
        "leave the door open please",
        "please delete the email draft",
        "I binned the old sofa",
    ):
        assert not asks_to_forget(said), said


def test_requests_naming_no_fact_in_taglish_or_by_what_was_told() -> None:
    """heldout9's q02 ("don't remember my salary", in Taglish) and q07 ("Please delete it"
    after the company name told): handed to meaning, the Taglish put into English first."""
    salary = ["The user is paid around 22,000 per month."]
    taglish = "btw wag mo na tandaan yung sahod ko ha, medyo private yun"
    assert forget_requests_naming_no_fact(taglish, salary) == [taglish]
    assert in_another_language(taglish)
    job = ["The user works as accountant at Tanaka Shoji."]
    told = "Excuse me, about my company name I told you. Please delete it."
    assert forget_requests_naming_no_fact(told, job) == [
        "excuse me, about my company name i told you; please delete it"
    ]


def test_a_request_pointing_back_at_a_thing_named_is_handed_to_meaning() -> None:
    """heldout9's q10 (read after its runs): "the fertility stuff" in the sentence before "Could
    you wipe whatever you've got on that?" is what the request means; no fact holds its words,
    so the embedder and the model are asked, with the request's own words beside it. A
    feeling before "don't keep that" names nothing (`test_a_bare_forget_it_still_points_nowhere`)."""
    ivf = ["The user started IVF in April 2024.", "The user lives in Toronto."]
    said = (
        "Hey, I've had second thoughts about sharing the fertility stuff here. Could you wipe"
        " whatever you've got on that?"
    )
    assert forget_requests_naming_no_fact(said, ivf) == [
        "i've had second thoughts about sharing the fertility stuff here; could you wipe"
        " whatever you've got on that"
    ]
    mentioned = "The money thing I mentioned. Please don't keep it."
    assert forget_requests_naming_no_fact(mentioned, ivf) == [
        "the money thing i mentioned; please don't keep it"
    ]
    assert forget_requests_naming_no_fact("so tired today. please don't keep that", ivf) == []


def test_a_bare_forget_it_still_points_nowhere() -> None:
    """Only a negated keep or a polite request reaches back: "forget it" alone is "never
    mind"; and a request whose earlier words no fact holds names nothing, not even by
    meaning (it is not handed to the embedder)."""
    assert not forget_request("I live in Oslo. Forget it.", "Ada lives in Oslo.")
    assert not forget_request(
        "I live in Oslo. Forget that, let's talk about figs.", "Lives in Oslo."
    )
    assert forget_request("I live in Oslo. Can you not keep that?", "Ada lives in Oslo.")
    facts = ["Ada lives in Oslo."]
    assert facts_clearly_asked("kinda gutted. don't keep that", facts) == []
    assert forget_requests_naming_no_fact("kinda gutted. don't keep that", facts) == []


def test_a_request_in_spanish_french_or_german_is_told_from_one_in_english() -> None:
    """Which requests naming no fact are first put into English (engine/forgetting.in_english):
    the embedder that ties them to a fact by meaning knows English only."""
    facts = ["The user has an interview at Brightline Logistics."]
    foreign = [
        "oye, olvida lo de la entrevista, ¿vale?",
        "Oublie ce que je t'ai dit sur mon régime, s'il te plaît.",
        "kannst du bitte vergessen, dass ich ADHS habe?",
        "vergiss bitte, was ich dir über meine Diät gesagt habe",
    ]
    english = [
        "Please forget the health thing I mentioned.",
        "I'd prefer you didn't hang on to the medication thing from before.",
        "Don't keep the money stuff.",
    ]
    for said, other in [(s, True) for s in foreign] + [(s, False) for s in english]:
        (request,) = forget_requests_naming_no_fact(said, facts)
        assert in_another_language(request) is other, said


def test_what_the_person_told_the_assistant_in_french_or_german_is_their_own_request() -> None:
    """ "ce que je t'ai dit" and "was ich dir ... gesagt habe" report the person's own telling,
    as "what I told you" does: the request stands and names its object, not the telling."""
    diet = "Ada's diet: she avoids gluten."
    for said in [
        "Oublie ce que je t'ai dit sur mon régime, s'il te plaît.",
        "Oubliez ce que je vous ai dit sur mon régime.",
        "Vergiss bitte, was ich dir über meine Diät gesagt habe.",
    ]:
        (request,) = forget_requests_naming_no_fact(said, [diet])
        assert "regim" in request or "diat" in request, said
    # someone else's telling is still reported speech
    assert not forget_requests_naming_no_fact("Ma soeur m'a dit: oublie mon régime.", [diet])
    assert not forget_requests_naming_no_fact("Mein Chef hat gesagt, vergiss die Diät.", [diet])


def test_what_a_turn_keeps_is_what_a_verb_of_keeping_or_a_negated_forget_names() -> None:
    """A request by meaning never means a fact the same turn asks to keep; a fact the turn
    only states something about may be the one it means (heldout6's q03)."""
    assert keeps("Forget my old job, but don't forget that I live in Oslo.", "Ada lives in Oslo.")
    assert keeps("Please remember my birthday is in May, and forget the rest.", "Birthday: May.")
    said = "didn't get the Brightline one, oh well. oye, olvida lo de la entrevista, ¿vale?"
    assert not keeps(said, "The user has an interview at Brightline Logistics.")


def test_requests_as_heldout11_wrote_them_name_their_fact() -> None:
    """heldout11 (read after its blind runs): "don't keep anything about ..." was read as
    "don't keep asking" (a word ending in -ing); "I don't want my weight saved anywhere"
    addressed no one; "don't save that anywhere" named "anywhere" and not the sertraline
    just before it."""
    facts = [
        "The user's brother Rohan is moving to Toronto.",
        "The user's weight is 68 kg.",
        "The user is taking sertraline for anxiety.",
        "The user's ex Darren has the kids every other weekend.",
    ]
    rohan = "also please don't keep anything about Rohan moving, he asked me to keep it quiet"
    weight = "woh weight wali baat bhool jao please, I don't want my weight saved anywhere"
    pills = (
        "my ex Darren has the kids every other weekend. actually scratch the sertraline bit,"
        " don't save that anywhere pls. the coffee stuff is fine to keep"
    )
    assert facts_clearly_asked(rohan, facts) == [0]
    assert facts_clearly_asked(weight, facts) == [1]
    assert facts_clearly_asked(pills, facts) == [2]


@pytest.mark.parametrize(
    "said",
    [
        "I don't want the kids kept indoors all summer",  # "kept": not only a memory's
        "I want my weight saved",  # wanted, not refused
        "don't keep asking me about the weather",
        "I don't want to keep the Honda, I'm selling it",
        "Nothing about the trip is decided yet",
    ],
)
def test_wishes_about_other_things_ask_nothing(said: str) -> None:
    assert not asks_to_forget(said)


def test_texting_insisting_and_the_bit_about() -> None:
    """heldout12's u01, u02 and u12 (read after its blind runs): "n" for "and" opens an
    imperative; a bare "just forget it ok" after a request insists, while "no, forget it" or
    "wait, forget it" take it back; "scrub the bit about my medication" is about memory as
    "the thing about" is, and names no fact by a word (the embedder ties it)."""
    loan = "The user's student loan is 4 grand short."
    assert forget_request("ok. n forget the loan thing too, sorted it w my mum", loan)
    house = "The user is saving for a down payment on a house."
    insisting = "dont keep the down payment stuff. we broke up. just forget it ok"
    assert forget_request(insisting, house)
    assert not forget_request("Forget the down payment. No, forget it.", house)
    assert not forget_request("Forget the down payment. Wait, forget it.", house)
    meds = "The user takes sertraline."
    scrub = "Could you scrub the bit about my medication? I'd rather it wasn't there."
    assert forget_requests_naming_no_fact(scrub, [meds]) == [
        "could you scrub the bit about my medication"
    ]
    # a broad verb with a thing of the world is a task, not a request about memory
    assert forget_requests_naming_no_fact("Could you scrub the pan for me?", [meds]) == []


def test_the_thing_about_in_spanish_french_and_german() -> None:
    """heldout12's u03 (read after its blind runs): "borra lo de mi peso" is "delete the
    thing about my weight", about memory as "the thing about" is; "lo de siempre" ("the
    usual") is not."""
    weight = ["The user weighs 72 kilograms."]
    for turn in [
        "Ah, y borra lo de mi peso, por favor, no quiero que quede apuntado.",
        "efface le truc sur mon salaire stp",
        "lösch bitte das mit meinem Gewicht",
    ]:
        assert forget_requests_naming_no_fact(turn, weight), turn
    assert forget_requests_naming_no_fact("lo de siempre: borra los correos viejos", weight) == []
    assert forget_requests_naming_no_fact("borra la pizarra", weight) == []


def test_a_request_names_a_fact_in_another_inflection_of_its_word() -> None:
    # heldout15's x03 (read): "speeding" and "speed" stemmed apart ("sped", "spe"), so the
    # request named no stored fact and the speeding ticket stayed
    said = "yo, forget the speeding thing i told you about, bit embarrassing"
    facts = [
        "The user is a vet nurse at a clinic in Wellington.",
        "The user was driving at a speed of 118 on the Desert Road.",
    ]
    assert facts_clearly_asked(said, facts) == [1]


@pytest.mark.parametrize(
    ("turn", "fact"),
    [
        # "kept" and "have ... saved" ask only of a thing named by a pronoun, and wanting it so
        ("I don't want the kids kept up late on school nights.", "Ada's kids go to bed at 8."),
        ("I'd rather not have the party at home this year.", "Ada is planning a party at home."),
        ("The receipts, I want them kept for the taxes.", "Ada keeps receipts for the taxes."),
        ("My notes from the course, I want that saved.", "Ada took notes at the course."),
    ],
)
def test_wanting_a_thing_kept_or_not_had_is_no_request_unless_it_is_memory(
    turn: str, fact: str
) -> None:
    assert not forget_request(turn, fact)
