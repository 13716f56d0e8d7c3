"""Which stored fact a new fact may replace: the one fact consolidation puts to the model's
replacement question beside an ADD (:meth:`memhub.engine.consolidate.Consolidator`).

Small models ADD "lives in Berlin" beside "lives in Paris" (issue 25's quality table) but
judge one pair of facts better. The pair is chosen here, without the model: the closest
stored fact shown in the prompt that a yes could replace. Each test that passes a fact over
is named, and the ADD's closest facts with the test each failed are logged, so a person
reading a run sees why a change was not asked about.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from uuid import UUID

from memhub.engine.change_support import one_matter, said_to_end, says_a_change
from memhub.engine.grounding import content_words, fold, named_subject
from memhub.engine.operations import refusal, users_as_read
from memhub.engine.prompts import (
    FactAnswerReply,
    FactQuestionReply,
    fact_answer_messages,
    fact_question_messages,
)
from memhub.engine.text import memory_hash
from memhub.errors import ProviderError
from memhub.llm import LLM
from memhub.llm.base import UnusableAnswerError, Usage
from memhub.store.records import Candidate, Turn

__all__ = [
    "REPLACES_AT_LEAST",
    "Answered",
    "Pick",
    "answered_otherwise",
    "best_rank",
    "gives_another_value",
    "passed_over",
    "replaceable",
]

log = logging.getLogger("memhub.consolidation")

# An ADD is put to the replacement question only beside a stored fact at least this close by
# the embedder (cosine, default embedder): a 1.5B said yes to "The user's legs are dying."
# closing "The user commutes 40 minutes each way to the warehouse." (0.138; heldout3,
# 5 December 2026). In the logged runs of that day the wrong yeses below 0.2 were at
# 0.09-0.17 and every right replacement at 0.28 or more ("is a junior web developer at
# Shopify" for "is a barista at Blue Bottle").
REPLACES_AT_LEAST = 0.2


def best_rank(candidate: Candidate) -> int:
    """A candidate's best place in the vector or the words ranking."""
    ranks = [r for r in (candidate.vector_rank, candidate.text_rank) if r is not None]
    return min(ranks, default=1_000_000)


def passed_over(
    candidate: Candidate,
    new: str,
    cited: Sequence[Turn],
    shown: set[UUID],
    touched: set[UUID],
    users: Sequence[str] = (),
    english: Mapping[int, str] | None = None,
) -> str | None:
    """Why ``candidate`` is not the fact ``new`` may replace, or None when it may be.

    Not shown in the prompt, or already changed by it; far in meaning (``REPLACES_AT_LEAST``;
    found by its words alone); about another named person (a 1.5B let "The user's brother
    Halvard is staying with her" close all it knew of "the user's mum Ingeborg": heldout5's
    e09); of another kind (``change_support.one_matter``: neither the same relation nor two
    words in common, the person's name aside, nor one beside a change said; "works days at
    the council" closed a speeding fine: heldout8's s01, "looking for an apartment in
    Utrecht" a job in Utrecht: heldout14), unless the turn says it ended ("Tasmania's off. We'll do
    a few days in the Barossa instead": heldout9's q01); or a change the guard would refuse
    ("visited Berlin" for "lives in Berlin"), not worth a question, and hiding the one it
    could ("lives in Paris"). ``users`` are the user's turns among ``cited``, as text;
    ``english`` their English readings, as the guard reads them (operations.refusal)."""
    record, cosine = candidate.record, candidate.vector_similarity
    if record.id not in shown:
        return "not shown"
    if record.id in touched:
        return "already changed"
    if record.hash == memory_hash(new):  # the store's own test of one memory
        return "the same fact"  # a question about a fact and itself is a call spent
    if cosine is None or cosine < REPLACES_AT_LEAST:
        return "far in meaning"
    subject = named_subject(record.memory)
    if subject != named_subject(new):
        return "another person"
    if not one_matter(record.memory, new, [subject]) and not said_to_end(users, record.memory, new):
        return "another kind"
    if refusal("SUPERSEDE", record, new, cited, (), paired=True, english=english):
        return "the turn says no change of it"
    return None


@dataclass(frozen=True)
class Pick:
    """The stored fact an ADD may replace, and how it is asked: the model's yes or no
    (:func:`memhub.engine.prompts.replacement_messages`), or, for a fact passed over only as
    of another kind where the person says a change, the fact's own question answered from
    the new fact (``by_answer``, :func:`answered_otherwise`)."""

    candidate: Candidate
    by_answer: bool = False


def replaceable(
    found: Sequence[Candidate],
    new: str,
    cited: Sequence[Turn],
    shown: set[UUID],
    touched: set[UUID],
    english: Mapping[int, str] | None = None,
) -> Pick | None:
    """The closest of ``found`` (stored facts near ``new``, best rank first) that ``new``, drawn
    from the ``cited`` turns (``english``: their English readings), may replace; its closest
    facts passed over are logged with why.

    Where every one is passed over and a statement of the person's own words among the cited
    turns says a change (``change_support.says_a_change``), the closest passed over only as
    of another kind is picked ``by_answer``: "I've gone fully vegan so no more fish" beside
    "is pescatarian" share no word and no relation the rules know."""
    ranked = sorted(found, key=best_rank)
    users = users_as_read(cited, english)
    reasons, another_kind = [], None
    for candidate in ranked:
        reason = passed_over(candidate, new, cited, shown, touched, users, english)
        if reason is None:
            return Pick(candidate)
        if reason == "another kind" and another_kind is None:
            another_kind = candidate
        reasons.append(f"{candidate.record.memory!r}: {reason}")
    if reasons:
        log.info("no replacement question for %r: %s", new, "; ".join(reasons[:3]))
    if another_kind is not None and says_a_change(users):
        return Pick(another_kind, by_answer=True)
    return None


def gives_another_value(answer: str, stored: str) -> bool:
    """Does ``answer``, to the question ``stored`` answers, give another value:
    words of its own and none of the fact's, and not UNKNOWN ("vegan" for "is pescatarian";
    not "Perth" for "home base is Perth")?"""
    words = content_words(answer)
    return bool(words) and "unknown" not in fold(answer) and not words & content_words(stored)


@dataclass(frozen=True)
class Answered:
    """What :func:`answered_otherwise` asked and decided, and what it cost (the question and
    answer empty where a call failed or was unusable)."""

    usage: Usage
    question: str = ""
    answer: str = ""
    another_value: bool = False


async def answered_otherwise(llm: LLM, stored: str, new: str) -> Answered:
    """Two short questions: the one ``stored`` answers ("What type of diet does the user
    follow?"), then that question answered from the ``new`` fact ("vegan"); whether the answer
    gives another value (:func:`gives_another_value`). A failed or unusable answer is no
    change.

    Asked whether one fact replaces the other, a 1.5B says yes to nearly every pair; so asked,
    it gave another value for 4 of the 7 labelled changes among the pairs the rules passed over
    as of another kind in five read sets' runs and for 1-2 of 40 others whose turn says a change
    (answered from the person's turn instead: 6 of 7, and 6 of 40; bench.change_turns,
    docs/llm.md, twenty-fifth stop)."""
    usage = Usage()
    try:
        asked = await llm.generate_structured(fact_question_messages(stored), FactQuestionReply)
        usage += asked.usage
        question = asked.value.question
        answer = await llm.generate_structured(fact_answer_messages(new, question), FactAnswerReply)
        usage += answer.usage
    except ProviderError as exc:
        log.info("question of %r skipped: %s", stored, exc)
        return Answered(usage + (exc.usage if isinstance(exc, UnusableAnswerError) else Usage()))
    said = answer.value.answer
    otherwise = gives_another_value(said, stored)
    decided = "another value" if otherwise else "no other value"
    log.info("question of %r: %r answered %r by %r (%s)", stored, question, said, new, decided)
    return Answered(usage, question, said, otherwise)
