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
from uuid import UUID

from memhub.engine.change_support import one_matter, said_to_end
from memhub.engine.grounding import named_subject
from memhub.engine.operations import refusal, users_as_read
from memhub.engine.text import memory_hash
from memhub.store.records import Candidate, Turn

__all__ = ["REPLACES_AT_LEAST", "best_rank", "passed_over", "replaceable"]

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


def replaceable(
    found: Sequence[Candidate],
    new: str,
    cited: Sequence[Turn],
    shown: set[UUID],
    touched: set[UUID],
    english: Mapping[int, str] | None = None,
) -> Candidate | None:
    """The closest of ``found`` (stored facts near ``new``, best rank first) that ``new``, drawn
    from the ``cited`` turns (``english``: their English readings), may replace; its closest
    facts passed over are logged with why."""
    ranked = sorted(found, key=best_rank)
    users = users_as_read(cited, english)
    reasons = []
    for candidate in ranked:
        reason = passed_over(candidate, new, cited, shown, touched, users, english)
        if reason is None:
            return candidate
        reasons.append(f"{candidate.record.memory!r}: {reason}")
    if reasons:
        log.info("no replacement question for %r: %s", new, "; ".join(reasons[:3]))
    return None
