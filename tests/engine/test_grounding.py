"""Content words shared: what counts as support for a fact, and what is a copy."""

from __future__ import annotations

import pytest

from memhub.engine.grounding import (
    content_words,
    first_clause,
    named_subject,
    one_sentence_each,
    restates,
    someone_elses,
    stated,
    stem,
    support,
    the_speakers_own,
    third_person_head,
)


def test_inflections_of_one_word_share_a_stem() -> None:
    assert stem("lives") == stem("live") == stem("living")
    assert stem("moved") == stem("moving") == stem("move")
    assert stem("peanuts") == stem("peanut")
    # a word ending in "eed" is no past tense ("speed"), but "agreed" is one
    assert stem("speed") == stem("speeding") == stem("speeds")
    assert stem("agreed") == stem("agree") == stem("agreeing")
    assert stem("needed") == stem("need")


def test_function_words_names_and_reporting_verbs_are_not_content() -> None:
    assert content_words("The user mentioned that she is at the", ignore=["Ada"]) == frozenset()
    assert content_words("Ada said Ada is here", ignore=["Ada"]) == frozenset()
    assert content_words("Ada lives in Paris") == {stem("ada"), stem("lives"), stem("paris")}


def test_a_paraphrase_of_the_turn_is_grounded() -> None:
    result = support("The user moved to Berlin for a new job.", ["I moved from Paris to Berlin."])
    assert result.grounded
    assert result.by_person == {stem("moved"), stem("berlin")}


def test_a_fact_sharing_nothing_with_the_cited_turn_is_not_grounded() -> None:
    result = support("The user owns a red bicycle.", ["I moved from Paris to Berlin."])
    assert not result.grounded
    assert result.copied_from is None


def test_the_prompt_example_repeated_is_a_copy_not_a_fact() -> None:
    instructions = 'Write facts like "Ada lives in Paris." or "likes tea" -> "likes green tea"'
    result = support(
        "Ada lives in Paris.", ["I started learning the violin."], [("instructions", instructions)]
    )
    assert not result.grounded
    assert result.copied_from == "instructions"


def test_the_example_is_fine_when_the_person_said_it_too() -> None:
    instructions = 'Write facts like "Ada lives in Paris."'
    result = support(
        "Ada lives in Paris.", ["Ada here: I live in Paris."], [("instructions", instructions)]
    )
    assert result.grounded


def test_a_name_only_the_instructions_hold_is_a_copy_of_them() -> None:
    # heldout5's e12: the one word the example gave was its city, and the fact stood
    instructions = 'Example: "my cousin Lena teaches piano in Graz, and I play the cello"'
    said = ["fyi im a dispatcher for the fire service in Albany"]
    fact = "The user is not a dispatcher for the fire service in Graz."
    result = support(fact, said, [("instructions", instructions)])
    assert not result.grounded
    assert result.copied_from == "instructions"
    # the template's name opening the fact (heldout2's k11: "party was chaos but he loved it")
    template = 'for someone they know, "The user\'s friend Ravi"'
    party = support("Ravi loved the party.", ["party was chaos but he loved it"], [("i", template)])
    assert party.copied_from == "i"
    # the example's numbers are not names: "2" here is the person's "two"
    counted = 'Example: "I have 2 cats" -> ["The user has 2 cats."]'
    kids = support("The user has 2 kids.", ["I have two kids"], [("instructions", counted)])
    assert kids.grounded


def test_the_assistants_words_put_in_the_users_mouth_are_a_copy() -> None:
    # One shared word ("premium") is not enough when the assistant's turn covers far more.
    result = support(
        "The user's premium plan costs $20 a month.",
        ["What does premium cost?"],
        [("assistant turn 2", "The premium plan costs $20 a month, billed yearly.")],
    )
    assert not result.grounded
    assert result.copied_from == "assistant turn 2"


def test_quoting_the_assistant_does_not_hide_the_users_own_words() -> None:
    result = support(
        "The user is allergic to peanuts.",
        ["You asked: yes, I am allergic to peanuts."],
        [("assistant turn 1", "Are you allergic to anything?")],
    )
    assert result.grounded


def test_the_example_wording_for_what_the_person_said_in_other_words_is_grounded() -> None:
    # the prompt's example "Ada lives in Paris." after "I moved to Paris": Paris is theirs
    result = support(
        "Ada lives in Paris.",
        ["I moved to Paris last week."],
        [("instructions", 'Write facts like "Ada lives in Paris."')],
        ignore=["ada"],
    )
    assert result.grounded


@pytest.mark.parametrize(
    ("fact", "turn"),
    [
        ("I'm allergic to peanuts.", "I'm allergic to peanuts, so keep that in mind."),
        ("u-h01: Aisle, please.", "Aisle, please. I get up a lot on long flights."),
        ("user: prefers the aisle", "Aisle, please."),
        ("Please keep your answers short.", "Please keep your answers short."),
        (
            "Jonas is a pilot for Lufthansa and has three dogs.",
            "My best friend Jonas is a pilot for Lufthansa and has three dogs.",
        ),
        ("We moved to Dublin.", "We moved to Dublin last week!"),
    ],
)
def test_a_fact_that_is_still_the_turn_restates_it(fact: str, turn: str) -> None:
    assert restates(fact, turn, speakers=["u-h01"])


@pytest.mark.parametrize(
    ("fact", "turn"),
    [
        ("The user is allergic to peanuts.", "I'm allergic to peanuts, so keep that in mind."),
        ("The user's friend Tom lives in Oslo.", "My friend Tom lives in Oslo."),
        ("The user moved to Dublin in the week of 2023-05-08.", "We moved to Dublin last week!"),
        ('The user\'s motto is "I never give up".', 'My motto: "I never give up".'),
        ("Allergy: the user reacts to peanuts.", "I'm allergic to peanuts."),
        ("Jon lost his job at the bank.", "Jon: I lost my job at the bank last week."),
        # a long turn rewritten about the user: 22 of its 25 words are the turn's, in order
        (
            "The user's friend Kwame is a junior doctor and never has time for long games. He"
            " is from Accra originally and misses the game nights there.",
            "My friend Kwame is a junior doctor and never has time for long games. He is from"
            " Accra originally and misses the game nights there.",
        ),
    ],
)
def test_a_fact_in_the_systems_own_words_does_not(fact: str, turn: str) -> None:
    assert not restates(fact, turn, speakers=["u-h01"])


def test_two_words_of_the_assistants_offer_are_not_the_users_taste() -> None:
    result = support(
        "The user's favorite Thai food is green curry.",
        ["I'm diabetic, so low sugar please. I also love Thai food."],
        [("assistant turn 3", "Here is a low sugar green curry.")],
    )
    assert result.by_person == {stem("thai"), stem("food")}
    assert not result.grounded
    assert result.copied_from == "assistant turn 3"


@pytest.mark.parametrize(
    ("turn", "kept"),
    [
        ("is tofu actualy high in protein?", ""),
        ("I'm vegan now. Is tofu high in protein?", "I'm vegan now."),
        ("Can you remember that I'm vegan?", "Can you remember that I'm vegan?"),
        ("What's the tallest mountain in Africa?\nI prefer aisle seats.", "I prefer aisle seats."),
        # a question keeps its clauses about the person, not what it asks (heldout3's m10)
        (
            "hey, I'm a nursing student at Cardiff uni, can you explain type 1 and type 2"
            " diabetes simply?",
            "I'm a nursing student at Cardiff uni",
        ),
        ("I need ideas for my son's party, any suggestions?", "I need ideas for my son's party"),
        # the statements a question opens with, before it asks (heldout15's x03, read)
        (
            "so first proper winter down in Dunedin and this flat is FREEZING, is a"
            " dehumidifier worth it or should i just get a heat pump?",
            "so first proper winter down in Dunedin, and this flat is FREEZING, is a"
            " dehumidifier worth it or should i just get a heat pump?",
        ),
        ("tofu is high in protein, right?", ""),
    ],
)
def test_a_question_about_the_world_states_nothing(turn: str, kept: str) -> None:
    assert stated(turn) == kept


@pytest.mark.parametrize(
    ("fact", "head"),
    [
        (
            "The user's son Mateo is 7 and dinosaur-obsessed, we're doing the museum on Saturday.",
            "The user's son Mateo is 7 and dinosaur-obsessed.",
        ),
        ("The user is a nurse, and I love it.", "The user is a nurse."),
        # the person beside "I" in the subject: both are the subject, in the third person
        (
            "The user's partner and I want to climb Kilimanjaro.",
            "The user and the user's partner want to climb Kilimanjaro.",
        ),
        (
            "The user's older sister and I share a flat.",
            "The user and the user's older sister share a flat.",
        ),
        # nothing about the user before the voice, or no voice at all: as it is
        ("The user's partner said I should rest.", None),
        ("I'm allergic to peanuts, so keep that in mind.", None),
        ("ada: Aisle, please. I get up a lot.", None),
        ('The user\'s motto is "I never give up".', None),
    ],
)
def test_a_rewrite_that_slides_back_into_the_turn_keeps_its_third_person_head(
    fact: str, head: str | None
) -> None:
    assert third_person_head(fact) == (head or fact)


TEMPLATE = "The user's friend Ravi"  # as memhub.engine.prompts.TEMPLATE_PERSON


@pytest.mark.parametrize(
    ("fact", "turn", "read"),
    [
        # the person's own statement, in the first person: the template's subject is the user
        (
            "The user's friend Ravi keeps three ferrets, Mo and Lu and Bo.",
            "I keep three ferrets, Mo and Lu and Bo, and it's chaos",
            "The user keeps three ferrets, Mo and Lu and Bo.",
        ),
        (
            "The user's friend Ravi's van is a 2009 Transit.",
            "my van is a 2009 Transit so parts are cheap",
            "The user's van is a 2009 Transit.",
        ),
        # only the clauses holding the fact's words count: "her" is another clause's
        (
            "The user's friend Ravi is sewing Mo a coat.",
            "ha. I'm sewing Mo a coat, red really is her colour",
            "The user is sewing Mo a coat.",
        ),
    ],
)
def test_the_templates_subject_on_the_persons_own_statement_is_the_user(
    fact: str, turn: str, read: str
) -> None:
    assert the_speakers_own(fact, TEMPLATE, [turn]) == read
    assert restates(read, turn) is False


@pytest.mark.parametrize(
    ("fact", "turn", "read"),
    [
        # chat typed with no subject is the speaker's (heldout3's m03 lost its e-bike so)
        (
            "The user's friend Ravi is doing the commute by e-bike now.",
            "sold the Honda last weekend! doing the commute by e-bike now, legs are dying",
            "The user is doing the commute by e-bike now.",
        ),
        (
            "The user's friend Ravi sold the Honda last weekend.",
            "sold the Honda last weekend! doing the commute by e-bike now",
            "The user sold the Honda last weekend.",
        ),
        # a capital first word may be a name: left as it is
        (
            "The user's friend Ravi sold the Honda last weekend.",
            "Tom sold the Honda last weekend!",
            "The user's friend Ravi sold the Honda last weekend.",
        ),
        # the model's pronoun for the person it made up: "his knee" is the person's own
        (
            "The user's friend Ravi tore a ligament in his knee playing badminton.",
            "also bad news, I tore a ligament in my knee playing badminton 😭",
            "The user tore a ligament in their knee playing badminton.",
        ),
        (
            "The user's friend Ravi joined the pool near his flat in Indiranagar.",
            "she wants me swimming instead, so I joined the pool near my flat in Indiranagar",
            "The user joined the pool near their flat in Indiranagar.",
        ),
        # the person in German (heldout10's r03, read after its runs)
        (
            "The user's friend Ravi is vegan.",
            "Kurzes Update: Seit Ostern esse ich komplett vegan, also auch keinen Käse mehr",
            "The user is vegan.",
        ),
        # someone named before, spoken of again with no subject in the same clause: theirs
        (
            "The user's friend Ravi sold the Honda.",
            "my brother sold the Honda, finally",
            "The user's friend Ravi sold the Honda.",
        ),
    ],
)
def test_a_statement_typed_with_no_subject_is_the_speakers(fact: str, turn: str, read: str) -> None:
    assert the_speakers_own(fact, TEMPLATE, [turn]) == read


@pytest.mark.parametrize(
    ("fact", "turn"),
    [
        # someone else's: a relative, a pronoun, a third person named, Ravi himself
        ("The user's friend Ravi fixes bikes.", "My sister fixes bikes in Leeds."),
        ("The user's friend Ravi fixes bikes.", "Mira fixes bikes and I ride them."),
        ("The user's friend Ravi fixes bikes.", "Mira fixes bikes. Good for her."),
        ("The user's friend Ravi fixes bikes.", "Ravi fixes bikes, I ride."),
        ("The user's friend Ravi is wearing a red coat.", "I'm sewing a coat, red is her colour"),
        ("The user's friend Ravi helped her move.", "helped her move house on sunday"),
        # the fact speaks of "he"; or no clause of the person's shares a word with it
        ("The user's friend Ravi left the bank, he needed his sleep.", "I left the bank, zzz"),
        ("The user's friend Ravi is 2023-09-18.", "I'm fine"),
        # another subject altogether
        ("The user's sister fixes bikes.", "I fix bikes."),
    ],
)
def test_a_fact_about_someone_else_keeps_its_subject(fact: str, turn: str) -> None:
    assert the_speakers_own(fact, TEMPLATE, [turn]) == fact


def test_the_template_is_the_prompts_own() -> None:
    from memhub.engine.prompts import CONSOLIDATION_SYSTEM, GAP_SYSTEM, TEMPLATE_PERSON

    assert TEMPLATE_PERSON == TEMPLATE
    for prompt in (CONSOLIDATION_SYSTEM, GAP_SYSTEM):
        assert TEMPLATE_PERSON in " ".join(prompt.split())


@pytest.mark.parametrize(
    ("fact", "head"),
    [
        (
            "The user commutes 40 minutes each way to the warehouse, which is a long drive.",
            "The user commutes 40 minutes each way to the warehouse.",
        ),
        ("The user is a nurse and works nights.", "The user is a nurse."),
        # one clause, or a first clause too short to be a fact of its own
        ("The user commutes 40 minutes each way to the warehouse.", None),
        ("The user's son, Mateo, is seven.", None),
    ],
)
def test_a_facts_first_clause_is_a_fact_of_its_own_when_it_names_the_user(
    fact: str, head: str | None
) -> None:
    assert first_clause(fact) == head


def test_a_name_only_the_assistant_said_is_its_answer_not_the_users_fact() -> None:
    # One borrowed word passes, but not a name: the assistant's suggestion is not the user's app
    assistant = [("assistant turn 4", "YNAB and Monarch are popular budgeting apps.")]
    turns = ["I need a budgeting app to pay down my card."]
    result = support("The user's budgeting app is YNAB.", turns, speakers=assistant)
    assert not result.grounded
    assert result.copied_from == "assistant turn 4"
    # the same single word from the user's own turn, or an ordinary word of the assistant's
    assert support(
        "The user's budgeting app is YNAB.", [*turns, "I use YNAB"], speakers=assistant
    ).grounded
    assert support("The user needs popular budgeting apps.", turns, speakers=assistant).grounded


def test_a_number_only_the_assistant_said_is_its_answer() -> None:
    assistant = [("assistant turn 2", "Mars has 2 moons, Phobos and Deimos.")]
    result = support("The user's planet has 2 moons.", ["I love my planet"], speakers=assistant)
    assert result.copied_from == "assistant turn 2"


def test_a_date_the_instructions_gave_is_no_borrowed_name() -> None:
    # the year comes from the prompt's note of the turn's date: the instructions may lend it
    instructions = [("instructions", "This turn was said on 19 June 2023.")]
    result = support("The user moved to Halifax in 2023.", ["we're in Halifax now"], instructions)
    assert result.grounded


def test_a_name_the_user_said_in_a_question_is_theirs_too() -> None:
    # the question itself grounds nothing, but the name in it is the user's, not the assistant's
    speakers = [("assistant turn 2", "Kilimanjaro's summit is 5,895 m.")]
    said = ["how tall is Kilimanjaro? my partner and I want to try climbing it in March"]
    stated = ["my partner and I want to try climbing it in March"]
    fact = "The user wants to try climbing Kilimanjaro in March."
    assert not support(fact, stated, speakers=speakers).grounded
    assert support(fact, stated, speakers=speakers, person_said=said).grounded


def test_a_fact_whose_words_are_mostly_the_models_own_is_not_the_users() -> None:
    # What the 1.5B answered to "Can you help me pick a budgeting app?" (heldout3's m05)
    turn = ["Can you help me pick a budgeting app?"]
    invented = "The user wants an app to track their spending and set financial goals."
    result = support(invented, turn)
    assert result.by_person  # it shares words with the turn: the old rule let it through
    assert not result.grounded
    assert result.invented >= {stem("spending"), stem("financial"), stem("goals")}
    # the same request said in the model's words, one of them new, stands
    assert support("The user wants help picking a budgeting app.", turn).grounded


def test_words_someone_said_or_a_date_gave_are_not_invented() -> None:
    assistant = [("assistant turn 2", "Spreadsheets track spending well.")]
    turn = ["I need a budgeting app"]
    fact = "The user needs an app to track daily spending."
    assert support(fact, turn).invented == {stem("track"), stem("daily"), stem("spending")}
    heard = support(fact, turn, speakers=assistant)
    assert heard.invented == {stem("daily")}  # (refused still: two words are the assistant's)
    dated = support("The user moved to Halifax in June 2023.", ["we moved to Halifax"])
    assert dated.invented == frozenset()
    assert dated.grounded


def test_a_fact_already_known_said_again_on_a_later_turn_is_not_invented() -> None:
    # heldout4's p09: the second session's "party was a hit" and the model's full fact again;
    # its words are those of the stored fact shown beside the turn, not the model's own
    fact = "The user's dad Tomasz is throwing a surprise party for his 70th birthday."
    later = ["party was a hit, he cried a bit lol. thank you!"]
    assert not support(fact, later, person_said=later).grounded
    known = "The user's dad Tomasz is throwing a surprise party for his 70th birthday."
    assert support(fact, later, person_said=[*later, known]).grounded


@pytest.mark.parametrize(
    ("fact", "said", "elses"),
    [
        # the relation named only as someone else's
        ("The user's husband works in Valencia.", ["Beatriz and her husband moved."], True),
        ("The user's husband is a chef.", ["Beatriz's new husband is a chef."], True),
        ("The user's job is in Leeds.", ["Tom moved to Leeds for his job."], True),
        # the person's own, in a turn or in a shown fact, or both kinds said
        ("The user's husband is a chef.", ["my husband is a chef"], False),
        ("The user's husband is a chef.", ["her husband", "The user's husband Tom"], False),
        ("The user's husband is a chef.", ["my husband and her husband are chefs"], False),
        # "their" in a shown fact about the user is the user's; in a turn, someone else's
        ("The user's friend Aroha teaches.", ["The user hikes with their friend Aroha."], False),
        ("The user's friend Aroha teaches.", ["Tom hikes with their friend Aroha."], True),
        # nothing said of the relation, an "'s" that owns nothing, no relation in the fact
        ("The user's husband is a chef.", ["we love cooking"], False),
        ("The user's mum is 60.", ["it's mum's birthday on Friday"], False),
        ("The user lives in Valencia.", ["Beatriz and her husband moved."], False),
    ],
)
def test_a_relation_said_only_as_someone_elses_is_not_the_users(
    fact: str, said: list[str], elses: bool
) -> None:
    assert someone_elses(fact, said) is elses


@pytest.mark.parametrize(
    ("fact", "whom"),
    [
        ("The user's brother Halvard is staying with her.", "halvard"),
        ("The user's mum Ingeborg fell and broke her wrist.", "ingeborg"),
        ("Kofi turns 40 in two weeks.", "kofi"),
        ("Eli's sister Mira is a vet.", "mira"),
        ("Eli's sister lives in Berlin.", "eli's sister"),
        ("The user lives in Paris.", ""),
        ("The user's phone is a Pixel 8.", ""),  # the user's things are the user's
        ("The user's sister lives in Leeds.", ""),  # unnamed: left to the other checks
    ],
)
def test_a_facts_named_subject(fact: str, whom: str) -> None:
    assert named_subject(fact) == whom


@pytest.mark.parametrize(
    ("fact", "facts"),
    [
        (
            "The user is Stefanie, 41. She is a vegetarian, but her husband cooks.",
            ["The user is Stefanie, 41.", "The user is a vegetarian, but her husband cooks."],
        ),
        (
            "The user plays bass. They are in a band. Their band is Static Bloom.",
            ["The user plays bass.", "The user is in a band.", "The user's band is Static Bloom."],
        ),
        (
            "The user moved to Leeds. The user works at Arup.",
            ["The user moved to Leeds.", "The user works at Arup."],
        ),
        # one sentence: an abbreviation's full stop is no sentence's end
        (
            "The user traded a Hilux for a Sat. Ranger XLT.",
            ["The user traded a Hilux for a Sat. Ranger XLT."],
        ),
        # about someone else: whose "he" is left to the checks
        (
            "The user's son Mateo is 7. He loves dinosaurs.",
            ["The user's son Mateo is 7. He loves dinosaurs."],
        ),
        # a sentence not starting over with a person stays with its fact
        ("The user went hiking. This helped a lot.", ["The user went hiking. This helped a lot."]),
    ],
)
def test_a_fact_about_the_user_is_one_sentence_each(fact: str, facts: list[str]) -> None:
    assert one_sentence_each(fact) == facts
