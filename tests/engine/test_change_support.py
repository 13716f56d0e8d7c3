"""What supports a model's change of a stored fact: the person's own words saying it
(:mod:`memhub.engine.change_support`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memhub.engine.change_support import one_matter, said_to_end, says_a_change, supports_change
from memhub.engine.consent import read_here

SUPERSEDE_ATTACKS = [  # (user turn, old, new): a model's SUPERSEDE each must not support
    ("Is it cold in Berlin this week?", "Ada lives in Paris.", "Ada lives in Berlin."),
    ("Berlin is lovely in spring.", "Ada lives in Paris.", "Ada lives in Berlin."),
    ("I love the museums in Berlin.", "Ada lives in Paris.", "Ada lives in Berlin."),
    ('My friend said "I moved to Berlin".', "Ada lives in Paris.", "Ada lives in Berlin."),
    ("Does anyone really hate olives?", "Ada likes olives.", "Ada hates olives."),
    ("Tom hates olives.", "Ada likes olives.", "Ada hates olives."),
    (
        "What's the weather in Berlin? I live in Paris.",
        "Ada lives in Paris.",
        "Ada lives in Berlin.",
    ),
    ("Me: I moved to Berlin\nTom: cool", "Ada lives in Paris.", "Ada lives in Berlin."),
]


CHANGES_SAID_PLAINLY = [  # (user turn, old, new): each a change the person states
    (
        "Good news: I got hired as a junior web developer at Shopify, starting tomorrow.",
        "The user is a barista at Blue Bottle.",
        "The user is a junior web developer at Shopify.",
    ),
    (
        "Big change: I moved to Vienna last month.",
        "The user lives in Graz.",
        "The user lives in Vienna.",
    ),
    (
        "I quit my job at Siemens; on Monday I start at Helio.",
        "The user works at Siemens.",
        "The user works at Helio.",
    ),
    (
        "I'm a teacher now, no longer a pharmacist.",
        "The user is a pharmacist.",
        "The user is a teacher, no longer a pharmacist.",
    ),
    (
        "These days I teach chemistry at a high school.",
        "The user is a pharmacist.",
        "The user is a chemistry teacher at a high school.",
    ),
    (
        "I sold my old Corolla and bought a Tesla.",
        "The user drives a Toyota Corolla.",
        "The user drives a Tesla.",
    ),
    (
        "Sam and I broke up last month, I'm single now.",
        "The user is dating Sam.",
        "The user is single.",
    ),
    (
        "My old phone died, so I bought a Pixel 8.",
        "The user has an iPhone 12.",
        "The user has a Pixel 8.",
    ),
    # where the person lives is one relation however the facts word it
    (
        "we finally did it, packed up the flat and we're in Exeter now",
        "The user has been based in Derby for 4 years.",
        "The user is in Exeter now.",
    ),
    ("I moved to Exeter in May.", "The user is based in Derby.", "The user lives in Exeter."),
]


CHANGES_NOT_THE_PERSONS = [  # (user turn, old, new): each must still be refused
    (
        "Good news: my sister got hired as a web developer at Shopify.",
        "The user is a barista at Blue Bottle.",
        "The user is a web developer at Shopify.",
    ),
    ("My sister moved to Berlin.", "The user lives in Paris.", "The user lives in Berlin."),
    ("Big change: Tom moved to Berlin.", "The user lives in Paris.", "The user lives in Berlin."),
    (
        "My friend: I got hired at Shopify",
        "The user is a barista.",
        "The user is a developer at Shopify.",
    ),
    (  # another relation: "is vegetarian" is not replaced by a job
        "Good news: I got hired at Shopify.",
        "The user is vegetarian.",
        "The user is a developer at Shopify.",
    ),
    (
        "Quick question: should I move to Berlin?",
        "The user lives in Paris.",
        "The user lives in Berlin.",
    ),
    (
        "Big news: I would never move to Berlin.",
        "The user lives in Paris.",
        "The user lives in Berlin.",
    ),
    (  # no change said
        "I love my job as a web developer at Shopify.",
        "The user is a barista at Blue Bottle.",
        "The user is a web developer at Shopify.",
    ),
    (  # "is in a band" is not where the person lives
        "I'm in a new band now.",
        "The user lives in Derby.",
        "The user is in a new band.",
    ),
    ("My sister moved to Exeter.", "The user is based in Derby.", "The user lives in Exeter."),
    (  # the place is the band's, not what "is in" says
        "I'm in a new band now.",
        "The user lives in Derby.",
        "The user is in a new band in Exeter.",
    ),
    (  # a new job does not replace where the person lives
        "I started a new job at Shopify.",
        "The user lives in Paris.",
        "The user works at Shopify.",
    ),
]


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


def test_a_change_texted_in_two_sentences_without_i() -> None:
    """heldout8's s01 and s11 (read after their runs): the old fact said to end in one
    sentence ("no more nights", "bye bye flatmates") and the news in another, with no "I";
    the replacement question was never put. The two must be of a kind, the news the person's."""
    council = "BIG news. got the job with the council!! parks team, days only. no more nights"
    nights = "The user works nights at the parcel depot."
    assert supports_change([council], nights, "The user works days at the council.")
    moved = "moved in with my boyfriend sam last weekend!! bye bye flatmates."
    flat = "The user lives with 2 flatmates in the northern quarter."
    assert supports_change([moved], flat, "The user lives with their boyfriend Sam.")
    # an end that is not the old fact's, news of another kind, or news someone else's
    sister = "no more nights for my sister. she got a day job at the council."
    assert not supports_change([sister], nights, "The user works days at the council.")
    tea = "I work nights. No more coffee for me though, on tea now."
    assert not supports_change([tea], nights, "The user drinks tea.")
    assert not supports_change(["still on nights. I love my cat."], nights, "The user has a cat.")


def test_a_plan_said_to_be_off_is_replaced_by_news_of_any_kind() -> None:
    """heldout9's q01 and q09 (read after their runs): "Tasmania's off ... the Barossa
    instead", "the keto's done ... back to eating normal". The old fact is said to end, so
    the news need not be of its kind; without the end said, it must."""
    tour = "The user is booked on a walking tour of Tasmania in May."
    off = "Tasmania's off. Lorraine's wrist isn't right yet. We'll do a few days in the Barossa."
    barossa = "The user will spend a few days in the Barossa."
    assert said_to_end([off], tour, barossa)
    assert supports_change([off], tour, barossa)
    keto = "The user started keto in the week of 2024-05-13."
    done = "aye so the keto's done, lasted 6 weeks. back to eating normal, cooking most nights"
    normal = "The user is back to eating normal."
    assert said_to_end([done], keto, normal)
    assert supports_change([done], keto, normal)
    # not said to end: another kind stays unasked
    still = "Tasmania is booked! We'll do a few days in the Barossa too."
    assert not said_to_end([still], tour, barossa)
    assert not supports_change([still], tour, barossa)
    assert not said_to_end(["Her trip to Tasmania is off."], tour, barossa)  # someone else's


@pytest.mark.parametrize(
    ("old", "new", "names", "asked"),
    [
        # heldout14's yeses, all wrong (read after its runs): one place, one thing, one name
        (
            "The user is a fysiotherapeut in Utrecht.",
            "The user is looking for an apartment in Utrecht.",
            (),
            False,
        ),
        (
            "The user is currently smoking brisket.",
            "The user is entering their first brisket cookoff.",
            (),
            False,
        ),
        (
            "The user's girlfriend Thandi makes a lekker chakalaka.",
            "The user's friend Thandi wants to take her pottery to the market.",
            ("Thandi",),
            False,
        ),
        # the same relation, two words in common, or one beside a change or an end said
        ("The user smokes about ten cigarettes a day.", "The user quit cigarettes.", (), True),
        ("The user has a girlfriend called Thandi.", "The user broke up with Thandi.", (), True),
        (
            "The user is a barista at Blue Bottle.",
            "The user is a junior web developer at Shopify.",
            (),
            True,
        ),
        ("Eli lives in Paris.", "Eli lives in Berlin.", ("Eli",), True),
        # the relation names the person, not the matter (heldout15's x01, read after its runs)
        (
            "The user's boyfriend Gethin is an electrician.",
            "The user's boyfriend Gethin is roped into doing the lights for St David's Day.",
            ("Gethin",),
            False,
        ),
        (
            "The user's boyfriend Gethin is an electrician.",
            "The user's boyfriend Gethin is a plumber now.",
            ("Gethin",),
            True,
        ),
        (
            "The user's best friend Ana lives in Porto.",
            "The user's friend Ana lives in Faro.",
            ("Ana",),
            True,
        ),
        ("The user drives a silver Honda Civic.", "The user sold the Honda Civic.", (), True),
        # where one lives, however the verb is put (heldout13's v05, read after its runs)
        ("The user lives in Dayton Ohio.", "The user is moving out to Tucson in March.", (), True),
        ("The user lives in Leeds.", "The user has moved to York.", (), True),
        ("The user is based in Leeds.", "The user relocated to York.", (), True),
        ("The user works as a QA engineer.", "The user is working at Shopify now.", (), True),
        # a task is no job
        ("The user works as a QA engineer.", "The user is working on a client demo.", (), False),
        # where one lives and one's job, however the fact puts them (the outside set's changes
        # are of city and job): a home in a place, a job, an occupation at a named employer
        ("The user lives in Dayton Ohio.", "The user bought a house in Hamilton.", (), True),
        ("The user has a flat in Glasgow.", "The user is based in Leeds.", (), True),
        ("The user works at Deloitte.", "The user got a job at Google.", (), True),
        ("The user is a nurse at St James's.", "The user was hired by Amazon.", (), True),
        ("The user quit their job at Deloitte.", "The user is employed by the council.", (), True),
        # not a home, not a job
        (
            "The user lives in Leeds.",
            "The user's favourite place in Paris is the Marais.",
            (),
            False,
        ),
        ("The user lives in Leeds.", "The user is from Cork.", (), False),
        ("The user works at Deloitte.", "The user is a member of a choir at church.", (), False),
        ("The user works at Deloitte.", "The user is a vegetarian.", (), False),
    ],
)
def test_one_word_in_common_does_not_make_two_facts_one_matter(
    old: str, new: str, names: tuple[str, ...], asked: bool
) -> None:
    assert one_matter(old, new, names) is asked


@pytest.mark.parametrize(
    "ended",
    [
        # heldout12's u06 (read after its blind runs)
        "Petit changement : Lisbonne, c'est annulé. On part plutôt à Annecy en juillet.",
        "Lisbon got cancelled. We're doing Annecy in July instead.",
        "the Lisbon trip is called off, so we'll do Annecy in July",
    ],
)
def test_a_plan_called_off_is_said_to_end(ended: str) -> None:
    lisbon = "The user is planning a trip to Lisbon with their sister."
    annecy = "The user is going to Annecy in July."
    assert said_to_end([ended], lisbon, annecy)
    assert supports_change([ended], lisbon, annecy)


def test_the_persons_name_alone_does_not_tie_a_change_to_a_fact() -> None:
    """Every fact about Ada names her: the new fact sharing only "Ada" with the old one is not
    about it, whatever the turn says."""
    dog = (["We have a new puppy now, Rex."], "Ada lives in Paris.", "Ada has a dog named Rex.")
    assert supports_change(*dog)  # without the names, "Ada" ties the two
    assert not supports_change(*dog, names=["ada"])
    moved = (["I moved to Berlin."], "Ada lives in Paris.", "Ada lives in Berlin.")
    assert supports_change(*moved, names=["ada"])


@pytest.mark.parametrize(("turn", "old", "new"), SUPERSEDE_ATTACKS)
def test_a_change_needs_a_statement_about_the_person_and_the_old_fact(
    turn: str, old: str, new: str
) -> None:
    assert not supports_change([turn], old, new)


def test_a_change_stated_by_the_person_is_supported() -> None:
    paris, berlin = "Ada lives in Paris.", "Ada lives in Berlin."
    assert supports_change(["Is Berlin nice? I moved there: Berlin, since May."], paris, berlin)
    assert supports_change(["Paris got too expensive, we live in Berlin now."], paris, berlin)
    assert supports_change(["Tom moved to Berlin."], "Tom lives in Paris.", "Tom lives in Berlin.")
    assert supports_change(["Me mudé a Berlín."], "Ada vive en París.", "Ada vive en Berlín.")
    assert supports_change(
        ["Ich mag keine Oliven mehr."], "Ada mag Oliven.", "Ada mag keine Oliven."
    )


def test_a_change_said_in_a_negated_clause_is_not_stated() -> None:
    oslo, berlin = "Ada lives in Oslo.", "Ada lives in Berlin."
    assert not supports_change(["I would never move to Berlin."], oslo, berlin)
    assert not supports_change(["I haven't moved to Berlin yet."], oslo, berlin)
    assert supports_change(["I don't live in Oslo anymore, I moved to Berlin."], oslo, berlin)
    assert supports_change(["No, I moved to Berlin."], oslo, berlin)


def test_a_statement_goes_on_from_the_persons_statement_before_it() -> None:
    car, newer = "Ada drives a blue Toyota Corolla.", "Ada drives a blue 2015 Toyota Corolla."
    assert supports_change(["I drive a blue Toyota Corolla.", "It's from 2015."], car, newer)
    assert not supports_change(["It's from 2015."], car, newer)  # from what?
    assert not supports_change(["Tom drives a Corolla.", "It's from 2015."], car, newer)
    # someone else as the subject of a statement sharing the old fact's words
    assert not supports_change(["She hates olives."], "Ada likes olives.", "Ada hates olives.")
    assert supports_change(
        ["Olives are awful now, I hate them."], "Ada likes olives.", "Ada hates olives."
    )


def test_an_article_opening_a_fact_is_not_a_name() -> None:
    # consolidation's facts open with "The user" (issue 35): "the" in someone else's
    # sentence must not make it the person's
    assert not supports_change(
        ["Tom hates the olives."], "The user likes olives.", "The user hates olives.", ["ada"]
    )
    assert supports_change(
        ["I hate olives now."], "The user likes olives.", "The user hates olives.", ["ada"]
    )


@pytest.mark.parametrize(("turn", "old", "new"), CHANGES_SAID_PLAINLY)
def test_a_change_said_plainly_in_the_first_person_is_supported(
    turn: str, old: str, new: str
) -> None:
    """The old fact's words need not come back: the person says a change, the news, and the
    new fact states the old one's relation ("is a ..." for "is a ...")."""
    assert supports_change([turn], old, new, ["u-1"])


@pytest.mark.parametrize(("turn", "old", "new"), CHANGES_NOT_THE_PERSONS)
def test_a_change_not_the_persons_or_of_another_relation_is_refused(
    turn: str, old: str, new: str
) -> None:
    assert not supports_change([turn], old, new, ["u-1"])


def test_a_new_number_for_the_same_thing_is_a_change() -> None:
    """heldout10's r09 (read after its runs): the new weight said with no word of the old
    fact and no word of change. Only a fact that differs by its number alone is renewed so."""
    said = ["Guess who's 96kg this morning!!! 😁 Walking every morning at 5:30."]
    assert supports_change(said, "The user weighs 104kg.", "The user weighs 96kg.")
    assert supports_change(["we have 3 kids now"], "The user has 2 kids.", "The user has 3 kids.")
    # another word beside the number: not the same thing renewed
    assert not supports_change(said, "The user weighs 104kg.", "The user's dog weighs 96kg.")
    # the number said of someone else
    her = ["My sister is 96kg this morning!"]
    assert not supports_change(her, "The user weighs 104kg.", "The user weighs 96kg.")
    # the number not said at all
    assert not supports_change(
        ["Walking every morning."], "The user weighs 104kg.", "The user weighs 96kg."
    )


def test_a_change_of_someone_the_user_knows_is_said_by_their_name() -> None:
    """heldout12's u09 (read after its blind runs): the daughter's change of plan said of
    her by name, with "her"; it read as someone else's news."""
    said = ["Lerato's changed her mind, now it's law at UCT, not medicine anymore."]
    old = "The user's daughter Lerato wants to do medicine at Wits."
    new = "The user's daughter Lerato wants to do law at UCT, not medicine anymore."
    assert supports_change(said, old, new)
    # someone else's plan, said of them
    other = ["Thandi's changed her mind, now it's law at UCT, not medicine anymore."]
    assert not supports_change(other, old, new)


@pytest.mark.parametrize(
    ("turn", "read"),
    [
        ("Update: we moved! Since June 1st we live in Zwolle, Lotte got a job there.", True),
        ("Cambio de planes: me he lesionado la rodilla y ya no voy a correr.", True),
        ("Petit changement : Lisbonne, c'est annulé, on part plutôt à Annecy.", True),
        ("Update: seit fünf Wochen rauchfrei!! Dafür gehe ich jetzt abends joggen.", True),
        ("ok", True),  # too short to tell: read, the strict way
        ("We ate grilled sardines every single night.", True),  # too short to tell
        (
            "Update: we zijn verhuisd! Sinds 1 juni wonen we in Zwolle. Mijn vriendin Lotte"
            " heeft daar een baan gekregen bij het waterschap",
            False,
        ),
        ("Zmiana planów! Od czerwca pracuję jako inspektor spawalniczy w firmie.", False),
        ("Kerem'le ayrıldık. Kapadokya planı da iptal tabii, görmek istemiyorum artık.", False),
        ("hisashiburi! houkoku desu. ginkou wa yamemashita. Kyoto ni hikkoshimashita", False),
        # one language's words at a time: Romanian's and Portuguese's short words ("un", "o",
        # "a", "e", "de") are Spanish, French or English words, and summed they were read
        ("Bună! Lucrez ca asistentă într-un spital din Iași și azi a fost o tură lungă.", False),
        ("Olá! Sou enfermeira num hospital em Braga e a minha filha começou a escola.", False),
        # a contraction is the word it shortens ("she's" is "she", "can't" "can"), with
        # either apostrophe, and what is left of one split ("o", "d") is no English word
        ("Sis finally visiting next week, she's staying till Sunday, can't wait honestly", True),
        ("Sis finally visiting next week, she\u2019s staying till Sunday, can\u2019t wait", True),
        (
            "Boas notícias: despedi-me do banco! Desde segunda sou guia em Óbidos, a usar o"
            " meu inglês e o meu francês.",
            False,
        ),
    ],
)
def test_which_turns_the_change_rules_read(turn: str, read: bool) -> None:
    assert read_here(turn) is read


def test_the_labelled_sets_english_spanish_french_and_german_turns_are_read() -> None:
    """What docs/consolidation.md says of ``consent.read_here`` over bench/llm_set: all but
    one in a hundred user turns of the conversations in English, Spanish, French or German
    are read (a wrong "not read" costs a translation call and lets the model's yes decide a
    change), and under a third of the turns of the conversations in other languages are.
    Counts only: a set not yet run blind must not have its turns printed by a failure."""
    other = re.compile(
        r"italian|dutch|turkish|polish|swahili|japanese|hindi|indonesian|portuguese|taglish"
        r"|arabic|swedish|romanian|vietnamese|greek|czech|finnish|hungarian|danish|afrikaans"
        r"|catalan|norwegian|estonian|lithuanian|slovak|icelandic",
        re.IGNORECASE,
    )
    read = {True: [0, 0], False: [0, 0]}  # in another language -> [turns, turns read]
    for path in sorted((Path(__file__).parents[2] / "bench" / "llm_set").glob("*.json")):
        for conversation in json.loads(path.read_text())["conversations"]:
            # the language is named in the kind's head ("Norwegian: ..."); the rest may name
            # another in passing
            elsewhere = other.search(conversation.get("kind", "").split(":")[0]) is not None
            for session in conversation["sessions"]:
                for message in session["messages"]:
                    if message["role"] == "user":
                        read[elsewhere][0] += 1
                        read[elsewhere][1] += read_here(message["content"])
    (turns, turns_read), (others, others_read) = read[False], read[True]
    unread = turns - turns_read
    assert turns > 900 and unread <= turns // 100, f"{unread} of {turns} turns not read"
    assert others > 200 and others_read < others / 3, f"{others_read} of {others} read"


def test_a_change_is_said_in_the_persons_own_statement() -> None:
    """What ``replacing.replaceable`` reads before putting a fact of another kind to its own
    question: a change or an end in a statement of the person's own words, not in a question
    or someone else's words reported."""
    assert says_a_change(["I've gone fully vegan so no more fish for me"])
    assert says_a_change(["hi!", "moved to Tucson last month, loving it"])
    assert not says_a_change(["I'm reading about vegan food, I love fish though"])
    assert not says_a_change(["have you ever moved to a new city?"])
    assert not says_a_change(["my sister said she moved to Tucson"])
    assert says_a_change(["I moved to Nairobi two weeks ago"])
    assert says_a_change(["the keto's done, lasted about 6 weeks"])
    assert not says_a_change(['my sister wrote: "we moved to Leeds"'])  # quoted, not theirs
    assert not says_a_change(["I'm looking for an apartment in Utrecht"])
