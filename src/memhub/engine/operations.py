"""A model's proposed operations, checked: real ids, cited turns, and the guard on changes.

:func:`plan_operations` maps a consolidation reply's local numbers back to stored facts and
shown turns; :func:`refusal` is the one rule a DELETE, SUPERSEDE or UPDATE must pass (a user
turn shown in that prompt supports it, :mod:`memhub.engine.consent`), and
:func:`removal_refused` applies it with the cap of ``MAX_REMOVALS`` per call, logging and
counting each refusal; a :class:`Plan` holds what one call decided.
:mod:`memhub.engine.consolidate` runs the flow around them.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from memhub.engine import forgetting
from memhub.engine.change_support import supports_change
from memhub.engine.consent import read_here
from memhub.engine.dates import said_at_utc
from memhub.engine.grounding import one_sentence_each
from memhub.engine.prompts import ConsolidationReply
from memhub.engine.text import turn_text
from memhub.errors import ProviderOutputError
from memhub.store.records import Job, MemoryRecord, Scope, Turn
from memhub.telemetry import record_guard

__all__ = [
    "CHANGES",
    "MAX_REMOVALS",
    "Plan",
    "PlannedOp",
    "one_fact_each",
    "plan_operations",
    "refusal",
    "removal_refused",
    "users_as_read",
]

log = logging.getLogger("memhub.consolidation")

#: DELETE, SUPERSEDE and UPDATE operations one consolidation call may apply; the rest are
#: refused. Over time, ``MEMHUB_MODEL_CHANGES_PER_DAY`` bounds them per user.
MAX_REMOVALS = 3


@dataclass(frozen=True)
class PlannedOp:
    """A checked operation, with real ids and the turns it came from."""

    kind: str
    target: MemoryRecord | None
    text: str | None
    turns: tuple[Turn, ...]
    # a DELETE's cited user turns that ask to forget its fact (the guard's decision, kept)
    asked: tuple[int, ...] = ()
    # a DELETE memhub read from the user's request itself, the model having proposed none
    unproposed: bool = False
    # a SUPERSEDE the model chose as one pair, asked whether the new fact replaces the old
    # (consolidation's replacement question), not one it proposed among all it was shown
    paired: bool = False
    # a SUPERSEDE whose stored fact's question the new fact answered with another value,
    # beside a change the person says (replacing.answered_otherwise), where the rules read no
    # change of that fact
    answered: bool = False

    @property
    def said_at(self) -> datetime:
        """The conversation's own time: the latest turn the operation cites."""
        return max(said_at_utc(t.created_at) for t in self.turns)


@dataclass
class Plan:
    """What one consolidation call decided, ready to apply in one short transaction."""

    jobs: Sequence[Job]
    scope: Scope  # the facts' scope (consolidate.fact_scope)
    turn_ids: list[int]
    read_set: dict[UUID, str] = field(default_factory=dict)  # facts shown: id -> hash
    ops: list[PlannedOp] = field(default_factory=list)
    vectors: list[Any] = field(default_factory=list)  # one per op with a text, in order
    runs: dict[int, str] = field(default_factory=dict)  # turn id -> its run (thread)
    memory_type: str | None = None
    usage: dict[str, int] | None = None
    turns: int = 0
    refused: Counter[str] = field(default_factory=Counter)  # refused operations, by reason
    episodes: dict[int, UUID] = field(default_factory=dict)  # turn id -> its episode's id
    # user turn id -> its English, for a turn in a language the rules do not read
    # (forgetting.read_in_english): facts may stand on it, changes are judged on it
    english: dict[int, str] = field(default_factory=dict)
    # what is left of the user's budgets of model changes (None: per day; else per
    # conversation, by session id), read when applying
    changes_left: dict[str | None, int] = field(default_factory=dict)

    def with_vectors(self) -> list[tuple[int, PlannedOp, Any]]:
        """Each operation with its place in ``ops`` and its text's vector (None for an
        operation without a text): ``vectors`` holds one per operation with a text, in order."""
        if sum(1 for op in self.ops if op.text) != len(self.vectors):
            raise ValueError("a plan holds one vector per operation with a text")
        embedded = iter(self.vectors)
        return [(i, op, next(embedded) if op.text else None) for i, op in enumerate(self.ops)]

    def drop(self, refused: Callable[[PlannedOp], bool]) -> None:
        """Leave out the operations ``refused`` says, with their vectors."""
        kept = [(op, vector) for _, op, vector in self.with_vectors() if not refused(op)]
        self.ops = [op for op, _ in kept]
        self.vectors = [vector for op, vector in kept if op.text]


def refusal(
    kind: str,
    target: MemoryRecord,
    text: str,
    cited: Sequence[Turn],
    asking: Sequence[int],
    paired: bool = False,
    english: Mapping[int, str] | None = None,
    answered: bool = False,
) -> str | None:
    """Why a DELETE, SUPERSEDE or UPDATE may not stand; None when a user turn supports it.

    An UPDATE rewords a fact: it is held to the SUPERSEDE rule, since a rewording can change
    what the fact says as much as a replacement can. Where no cited user turn is in a
    language the change rules read (``consent.read_here``: "we zijn verhuisd! Sinds 1
    juni wonen we in Zwolle"), a ``paired`` SUPERSEDE stands on the model's answer about that
    one pair: the rules could not tell a change from none, and a wrong one is a closed fact in
    the person's review list, reopened in one step, within the budget of model changes.

    Only the person may change what is known about them, in a turn shown in this prompt:
    the stored role decides, so an assistant or tool turn, or metadata naming a speaker, is
    data whatever the model made of it (:mod:`memhub.engine.consent`).

    A cited turn with an ``english`` reading (``forgetting.read_in_english``: a language the
    rules do not read) is read in that English, as a turn said in English is: "rzuciłem
    palenie" holds no word they read, "I quit smoking" does. Without one, the model's own
    SUPERSEDE from such a turn is refused and a ``paired`` one stands on the yes, as above.

    An ``answered`` SUPERSEDE stands where a cited user turn says a change and the new fact
    answers the stored fact's question with another value
    (:func:`memhub.engine.replacing.answered_otherwise`): the rules tie the change to no fact.
    """
    users = users_as_read(cited, english)
    if not users:
        return "it cites no user turn of this prompt"
    if kind == "DELETE":
        return None if asking else "no cited user turn asks to forget this fact"
    names = {t.user_id for t in cited if t.user_id}
    if supports_change(users, target.memory, text, names):
        return None
    if paired and kind == "SUPERSEDE" and not any(map(read_here, users)):
        return None
    if answered and kind == "SUPERSEDE":
        return None
    return "no cited user turn is about this fact and says what replaces it"


def users_as_read(cited: Sequence[Turn], english: Mapping[int, str] | None) -> list[str]:
    """The user turns among ``cited`` as the change rules read them: a turn's ``english``
    reading where it has one (a language they do not read), else what was said."""
    read = english or {}
    return [read.get(t.id) or turn_text(t) for t in cited if t.role == "user"]


def removal_refused(
    op: PlannedOp,
    cited: Sequence[Turn],
    cap_spent: bool,
    english: Mapping[int, str] | None = None,
) -> bool:
    """Whether a DELETE, SUPERSEDE or UPDATE is refused (or capped); logged, counted if so.
    ``english``: the cited turns' English readings, as :func:`refusal` reads them."""
    kind, target = op.kind, op.target
    assert target is not None
    reason = refusal(
        kind,
        target,
        op.text or "",
        cited,
        op.asked,
        paired=op.paired,
        english=english,
        answered=op.answered,
    )
    outcome = "refused"
    if reason is None and cap_spent:
        reason, outcome = "the cap of removals per call is spent", "capped"
    if reason is None:
        return False
    turn_ids = [t.id for t in cited]
    log.warning("%s of %s %s: %s (cited turns %s)", kind, target.id, outcome, reason, turn_ids)
    record_guard(f"consolidation.{kind.lower()}", outcome)
    return True


def plan_operations(
    reply: ConsolidationReply,
    facts: Sequence[MemoryRecord],
    turns: Sequence[Turn],
    max_removals: int = MAX_REMOVALS,
    refused: Counter[str] | None = None,
    meant: Sequence[forgetting.Ask] = (),
    english: Mapping[int, str] | None = None,
) -> list[PlannedOp]:
    """Map the model's local numbers back to memories and turns, refusing what does not fit.

    A DELETE, SUPERSEDE or UPDATE stands only when a cited user turn supports it
    (:func:`refusal`), and at most ``max_removals`` of them per call; a refused one changes
    nothing (the turns stay stored). Each refusal is logged and counted
    (``memhub.guard.refused``). An operation that cannot be applied as written (a fact
    number not shown, a second operation on one fact, an empty fact) is refused on its own
    and counted in ``refused``; the rest of the reply stands. Retrying would not help: the
    model answered valid JSON and would answer the same again.
    """
    planned: list[PlannedOp] = []
    touched: set[int] = set()
    removals = 0
    for op in reply.operations:
        if op.op == "NONE":
            continue
        cited = tuple(turns[n - 1] for n in sorted(set(op.turns)) if 1 <= n <= len(turns))
        target = None
        text = (op.text or "").strip()
        kind = op.op
        if kind in ("UPDATE", "SUPERSEDE") and (op.id or "").strip().lower() in _NO_ID:
            # no stored fact named: new knowledge, which small models often label UPDATE
            kind = "ADD"
        try:
            if kind in ("UPDATE", "SUPERSEDE", "DELETE"):
                number = _fact_number(op.id, len(facts))
                if number in touched:
                    raise ProviderOutputError(f"fact {number} has more than one operation")
                touched.add(number)
                target = facts[number - 1]
            if kind != "DELETE" and not text:
                raise ProviderOutputError(f"{kind} operation with an empty fact")
        except ProviderOutputError as exc:
            log.warning("%s operation refused: %s", kind, exc)
            if refused is not None:
                refused["REFUSED_INVALID"] += 1
            continue
        # ADD only adds knowledge; without a valid citation it comes from the batch.
        planned_op = PlannedOp(kind, target, text or None, cited or tuple(turns))
        if kind in CHANGES:
            assert target is not None
            if kind == "DELETE":
                planned_op = replace(planned_op, asked=forgetting.asking(target, cited, meant))
            if removal_refused(planned_op, cited, removals >= max_removals, english):
                continue
            removals += 1
        planned.append(planned_op)
    return planned


_NO_ID = ("", "none", "null")
#: What changes a stored fact: guarded, capped per call and counted in the user's budget.
CHANGES = ("DELETE", "SUPERSEDE", "UPDATE")


def _fact_number(raw: str | None, shown: int) -> int:
    try:
        number = int(str(raw).strip().strip("[]#"))
    except ValueError:
        raise ProviderOutputError(
            f"operation refers to fact {raw!r}, which is not a number"
        ) from None
    if not 1 <= number <= shown:
        raise ProviderOutputError(f"operation refers to fact {number}, which was not shown")
    return number


def one_fact_each(ops: Sequence[PlannedOp]) -> list[PlannedOp]:
    """``ops`` with each fact that runs several sentences about the user together split into
    one fact per sentence (:func:`memhub.engine.grounding.one_sentence_each`), each then
    checked on its own: the first keeps the operation's kind and target, the others are ADDs
    citing the same turns. A change then closes only the sentence it changes."""
    split: list[PlannedOp] = []
    for op in ops:
        sentences = one_sentence_each(op.text) if op.text and op.kind != "DELETE" else []
        if len(sentences) < 2:
            split.append(op)
            continue
        log.info("%r split into %d facts: %r", op.text, len(sentences), sentences)
        split.append(replace(op, text=sentences[0]))
        split += [PlannedOp("ADD", None, sentence, op.turns) for sentence in sentences[1:]]
    return split
