"""Whether a fact the model proposed is the user's own, and how it may stand.

One operation at a time: its person named as the user's turns name them, then refused as a
secret, a copy of a turn, someone else's, or not said by the person (grounding.support), or
kept with its citations corrected and its relative dates made absolute. The consolidator
(:mod:`memhub.engine.consolidate`) calls :func:`ground` for each operation of a window.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from memhub.engine.dates import absolute_dates, keep_the_date, said_at_utc
from memhub.engine.grounding import (
    Support,
    first_clause,
    restates,
    someone_elses,
    stated,
    support,
    the_speakers_own,
    third_person_head,
)
from memhub.engine.operations import PlannedOp
from memhub.engine.prompts import TEMPLATE_PERSON
from memhub.engine.relations import as_the_user, the_person_meant, with_relation
from memhub.engine.sensitive import secret_in
from memhub.engine.text import turn_text
from memhub.store.records import Turn

__all__ = ["Sources", "ground", "named_as_said"]

log = logging.getLogger("memhub.consolidation")


@dataclass(frozen=True)
class Sources:
    """What a fact is checked against besides the user's turns (:func:`grounding.support`):
    the prompt's instructions, the other speakers' turns, everything the user said in the
    window and the facts already known of them (a name said there is theirs), and the names
    that never count."""

    instructions: tuple[tuple[str, str], ...]
    speakers: tuple[tuple[str, str], ...]
    user_said: tuple[str, ...]
    names: frozenset[str]

    def support(self, fact: str, person_turns: Sequence[str]) -> Support:
        return support(
            fact, person_turns, self.instructions, self.names, self.speakers, self.user_said
        )


def ground(
    op: PlannedOp,
    people: Sequence[Turn],
    texts: dict[int, str],
    sources: Sources,
    english: Mapping[int, str] | None = None,
) -> tuple[PlannedOp | None, str]:
    """``op`` as it may stand (its citations corrected, its relative dates made absolute), or
    None and the reason it is refused (see
    :meth:`memhub.engine.consolidate.Consolidator._grounded`). ``english``: the English
    reading of the person's turns said in a language the rules do not read
    (``forgetting.read_in_english``), which a fact the turns as said do not carry may stand
    on instead."""
    if op.kind == "DELETE" or op.text is None:  # its own guard decided; a text beside is noise
        return op, ""
    own = [texts[t.id] for t in people]
    read = [(english or {}).get(t.id) or said for t, said in zip(people, own, strict=True)]
    text = _named(third_person_head(op.text), own, read, sources.user_said)
    if secret_in(text) is not None:  # a card number, a password: never a fact
        return None, "REFUSED_SECRET"
    names = sources.names
    if any(restates(text, turn, names) for turn in {*own, *read}):  # as said, and in English
        return None, "REFUSED_COPY_OF_TURN"
    if someone_elses(text, sources.user_said):  # "The user's husband" from "her husband"
        return None, "REFUSED_SOMEONE_ELSES"
    # a fact stands on what the user stated, never on a question about the world
    said = {t.id: stated(texts.get(t.id, turn_text(t))) for t in (*op.turns, *people)}
    op, result = _supported(op, text, people, said, sources)
    if not result.grounded and english:
        in_english = _supported_in_english(op, text, people, said, sources, english)
        op, result = in_english or (op, result)
    if result.grounded:
        # "yesterday" in a stored fact means nothing a week later: the date it meant on the
        # day of the turn replaces it, whether or not the model used the prompt's note; a
        # date the model left out comes back from its one cited turn
        text = absolute_dates(text, op.said_at.date())
        told = [t for t in op.turns if t.role == "user"]
        if len(told) == 1:
            whole = texts.get(told[0].id, turn_text(told[0]))
            text = keep_the_date(text, whole, said_at_utc(told[0].created_at).date())
        return replace(op, text=text), ""
    if result.copied_from is None:
        return None, "REFUSED_UNGROUNDED"
    head = first_clause(text)
    if head is not None:
        # "The user commutes 40 minutes to the warehouse, which is a long drive in winter":
        # the model tied the assistant's words to the user's fact; the fact alone may stand
        log.info("%r copies the %s; its first clause is tried alone", text, result.copied_from)
        return ground(replace(op, text=head), people, texts, sources, english)
    return None, "REFUSED_COPY_OF_" + result.copied_from.split()[0].upper()


def _named(text: str, own: list[str], read: list[str], known: Sequence[str]) -> str:
    """``text`` named as the person's turns (``own``) name them (:func:`named_as_said`); where
    the prompt's made-up person is still its subject and some turns have an English reading
    (``read``), named as that reading names them. "The user's friend Ravi has two cats, Pamuk
    and Duman." is the person's own statement in "I have two cats, Pamuk and Duman", which
    "Iki kedim var, Pamuk ve Duman" says to no rule (heldout14, read: 81 facts refused as
    copies of the instructions, some the user's own in Turkish or Swahili)."""
    named = named_as_said(text, own, known)
    if read == own or not _MADE_UP.search(named):
        return named
    return named_as_said(named, read, known)


_MADE_UP = re.compile(rf"\b{re.escape(TEMPLATE_PERSON.split()[-1])}\b")


def _supported(
    op: PlannedOp, text: str, people: Sequence[Turn], said: Mapping[int, str], sources: Sources
) -> tuple[PlannedOp, Support]:
    """How the turns ``op`` cites (``said``: what each stated) support ``text``; when they do
    not, the user turns that do, cited instead (small models cite the wrong turn)."""
    cited = [said[t.id] for t in op.turns if t.role == "user"]
    result = sources.support(text, cited)
    if result.grounded:
        return op, result
    names = sources.names
    backing = tuple(t for t in people if support(text, [said[t.id]], (), names).by_person)
    backed = sources.support(text, [said[t.id] for t in backing])
    if backed.grounded:
        return replace(op, turns=backing), backed
    return op, backed


def _supported_in_english(
    op: PlannedOp,
    text: str,
    people: Sequence[Turn],
    said: Mapping[int, str],
    sources: Sources,
    english: Mapping[int, str],
) -> tuple[PlannedOp, Support] | None:
    """:func:`_supported` with the person's turns read in ``english`` where they have an
    English reading, if that grounds ``text``; else None.
    "The user is a nurse working night shifts." shares no word with "Mimi ni muuguzi, nafanya
    zamu za usiku"; its English reading carries it. Copies are judged against the turn as
    said, before this."""
    read = {t.id: english[t.id] for t in people if english.get(t.id)}
    if not read:
        return None
    in_english = {**said, **{i: stated(r) for i, r in read.items()}}
    sources_in_english = replace(sources, user_said=(*sources.user_said, *read.values()))
    found, result = _supported(op, text, people, in_english, sources_in_english)
    if not result.grounded:
        return None
    log.info("%r stands on the English reading of turns %s", text, sorted(read))
    return found, result


def named_as_said(text: str, said: list[str], known: Sequence[str] = ()) -> str:
    """``text`` with its person named as the user's turns (``said``) name them: the user by
    the name they gave themselves there or in the ``known`` facts (``relations.as_the_user``),
    the prompt's template subject read as the user (``grounding.the_speakers_own``), its
    made-up person as the one the user named (``relations.the_person_meant``), and the
    relation the user gave them (``relations.with_relation``); each change logged."""
    for rewrite, why, turns in (
        (as_the_user, "names the user by their own name", [*said, *known]),
        (the_speakers_own, "read as the user's own statement", said),
        (the_person_meant, "names the person the turns name", said),
        (with_relation, "named as the user's turns name the person", said),
    ):
        rewritten = rewrite(text, TEMPLATE_PERSON, turns)
        if rewritten != text:
            log.info("%r %s: %r", text, why, rewritten)
            text = rewritten
    return text
