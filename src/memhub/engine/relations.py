"""Who a named person is to the user, as the user said it: "my girlfriend Anja", "mum Val".

The consolidation prompt shows one template for a person the user knows ("The user's friend
Ravi", :data:`memhub.engine.prompts.TEMPLATE_PERSON`), and a 1.5B model copies its word
"friend" for everyone: heldout8 (read after its runs) stored a wife, a son and a boyfriend as
"The user's friend ...", and "meine freundin Anja" as a friend. Or it drops the relation
and writes "Val got diagnosed with early Alzheimer's in March." from "my mum Val ...",
which says the turn again and tells no one who Val is. Where the user's own turns name the
person with a relation, the fact takes it: the relation is the user's word, not the model's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memhub.engine.grounding import content_words, fold, stated_sentences
from memhub.engine.people_words import KIND, OWNER, RELATION, SELF_NAMED

__all__ = ["as_the_user", "people_named", "relation_of", "the_person_meant", "with_relation"]

# A relation said before a name: "my girlfriend Anja", "mum Val" at the start of a clause;
# group 1 is the relation.
_INTRODUCED = rf"(?:\b{OWNER}\s+|(?:^|[.!?,;:]\s*))({KIND}{RELATION})\s*,?\s+"
# The name after the person's own introduction; "I'm Linda's mum" names Linda's mother.
_SELF_NAMED = re.compile(rf"(?:^|[^\w'])(?:{SELF_NAMED})\s+([^\W\d_]+)\b(?!['’]s\b)")
# A fact opening with a name: "Val got diagnosed ...", "Leo only cares about dinosaurs."
_OPENING_NAME = re.compile(r"([A-Z][^\W\d_]+(?:-[A-Z][^\W\d_]+)?)(?:'s)?\s")
_NOT_NAMES = frozenset({"the", "a", "an", "this", "that", "it", "they", "he", "she", "we", "i"})


def relation_of(name: str, turns: Iterable[str]) -> str | None:
    """The relation the user last named ``name`` with in ``turns`` (their own words): "my
    girlfriend Anja", "our granddaughter Isla", "Anja, my girlfriend", "mum Val" at the
    start of a clause; None when no turn says one."""
    who = re.escape(fold(name))
    before = re.compile(rf"{_INTRODUCED}{who}\b")
    after = re.compile(rf"\b{who}\s*,\s*{OWNER}\s+({KIND}{RELATION})\b")
    found: str | None = None
    for turn in turns:
        said = fold(turn)
        for pattern in (before, after):
            for match in pattern.finditer(said):
                found = match.group(1)
    return found


def with_relation(fact: str, template: str, turns: Iterable[str]) -> str:
    """``fact`` naming its person by the relation the user's ``turns`` give them.

    ``template`` is the prompt's subject for someone the user knows ("The user's friend
    Ravi"): "The user's friend Anja ..." becomes "The user's freundin Anja ..." after "meine
    freundin Anja"; "Val got diagnosed ..." becomes "The user's mum Val got diagnosed ..."
    after "my mum Val". ``fact`` as it is when no turn names a relation, or names the
    template's own ("friend")."""
    turns = list(turns)
    owner, _, word = template.rpartition(" ")[0].rpartition(" ")  # "The user's", "friend"
    prefix = f"{owner} {word} "
    if fact.startswith(prefix):
        name = _OPENING_NAME.match(fact, len(prefix))
        relation = relation_of(name.group(1), turns) if name else None
        if relation is None or relation == word:
            return fact
        return f"{owner} {relation} {fact[len(prefix) :]}"
    name = _OPENING_NAME.match(fact)
    if name is None or fold(name.group(1)) in _NOT_NAMES:
        return fact
    relation = relation_of(name.group(1), turns)
    return fact if relation is None else f"{owner} {relation} {fact}"


def people_named(turns: Iterable[str]) -> frozenset[str]:
    """The people the user's ``turns`` introduce by a relation, as typed with a capital ("my
    partner Svenja", "My daughter Wanjiru"): a lower-case word after a relation may be a verb
    ("my wife works")."""
    introduced = re.compile(rf"{_INTRODUCED}([A-Z][^\W\d_]+)", re.IGNORECASE)
    return frozenset(
        name
        for turn in turns
        for _, name in introduced.findall(turn)
        if name[0].isupper() and fold(name) not in _NOT_NAMES
    )


def the_person_meant(fact: str, template: str, turns: Iterable[str]) -> str:
    """``fact`` with the template's made-up person ("Ravi" of "The user's friend Ravi") named
    as the user's ``turns`` name them, when the sentences holding the fact's words name one
    person the turns introduce and no turn says the template's name: "Ravi has a job at a
    Reederei in Hamburg." after "my partner Svenja ..." and "Svenja hat dort eine Stelle bei
    einer Reederei bekommen" is Svenja's (heldout9's q03, read after its runs). ``fact`` as it
    is otherwise; a person never introduced is not guessed."""
    turns = list(turns)
    name = template.split()[-1]
    made_up = re.compile(rf"\b{re.escape(name)}\b")
    said = re.compile(made_up.pattern, re.IGNORECASE)  # "ravi" typed in lower case is Ravi
    if not made_up.search(fact) or any(said.search(t) for t in turns):
        return fact
    known = people_named(turns)
    words = content_words(made_up.sub(" ", fact))
    meant: set[str] = set()
    for turn in turns:
        last: set[str] = set()  # who the turn named last: whom "he", "ella" go on about
        for sentence in stated_sentences(turn):
            named = {p for p in known if re.search(rf"\b{re.escape(p)}\b", sentence, re.I)}
            if content_words(sentence) & words:
                if named:
                    meant |= named
                elif len(last) == 1 and _PRONOUN.match(fold(sentence)):
                    meant |= last
            last = named or last
    return made_up.sub(meant.pop(), fact) if len(meant) == 1 else fact


# A sentence opening with "he", "she" (or "ella", "elle", "er", "lei") goes on about the person
# named before it: "my brother Rohan ... he's a structural engineer" (heldout11's s09), "mi
# mejor amiga Marta ... Ella es vegana" (s04; both read after their blind runs). Not "il",
# "el", "sie": an impersonal "il y a", an article, a "they".
_PRONOUN = re.compile(
    r"\W*(?:(?:and|also|but|y|et|und|e|pero|mais|aber)\s+)?(?:he|she|ella|elle|er|lei)\b"
)


def names_of_the_user(turns: Iterable[str]) -> frozenset[str]:
    """The names the user gives themselves in their ``turns`` ("I'm Bernard", "me llamo
    Mariana"), folded."""
    return frozenset(name for turn in turns for name in _SELF_NAMED.findall(fold(turn)))


def as_the_user(fact: str, template: str, turns: Iterable[str]) -> str:
    """``fact`` about the user when it names them by the name they gave themselves: "The
    user's friend Bernard is 67 years old." -> "The user is 67 years old." after "je
    m'appelle Bernard, 67 ans" (heldout10's r05, read after its runs: the model took the
    user for the template's friend); "Bernard's dog is called Filou." -> "The user's dog is
    called Filou.". Only where the user's ``turns`` (or a stored fact, "The user is
    Bernard.") give the name so (:data:`~memhub.engine.people_words.SELF_NAMED`); ``fact`` as
    it is otherwise."""
    owner = template.rpartition(" ")[0].rpartition(" ")[0]  # "The user's"
    prefix = template.rpartition(" ")[0] + " "  # "The user's friend "
    start = len(prefix) if fact.startswith(prefix) else 0
    name = _OPENING_NAME.match(fact, start)
    if name is None or fold(name.group(1)) in _NOT_NAMES:
        return fact
    if fold(name.group(1)) not in names_of_the_user(turns):
        return fact
    user = owner if name.group(0).rstrip().endswith("'s") else owner.removesuffix("'s")
    return f"{user} {fact[name.end() :]}"
