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

from memhub.engine.grounding import fold

__all__ = ["relation_of", "with_relation"]

# Relations a person is named with, in the four languages memhub reads.
_RELATION = (
    r"(?:best friend|friend|girlfriend|boyfriend|partner|wife|husband|fianc\w*|spouse|son"
    r"|daughter|kids?|mum|mom|mother|mama|dad|father|papa|parents?|brother|sister|sibling"
    r"|twin|grandson|granddaughter|grandchild|grandma|grandpa|grandmother|grandfather|gran"
    r"|nan|cousin|aunt|uncle|niece|nephew|stepson|stepdaughter|boss|manager|colleague"
    r"|coworker|co-worker|flatmate|roommate|housemate|neighbou?r|mentor|coach|teacher"
    r"|therapist|doctor|vet|dog|cat|puppy|kitten|esposa|esposo|marido|mujer|novia|novio"
    r"|pareja|hij[oa]|madre|padre|mama|papa|herman[oa]|abuel[oa]|prim[oa]|ti[oa]|suegr[oa]"
    r"|amig[oa]|jefe|jefa|femme|mari|copine|copain|fils|fille|mere|pere|frere|soeur"
    r"|grand-mere|grand-pere|cousine?|tante|oncle|amie?|patron|chef|frau|mann|freundin|freund"
    r"|sohn|tochter|mutter|vater|mutti|vati|bruder|schwester|oma|opa|kollegin|kollege|chefin)"
)
_OWNER = (
    r"(?:my|our|mi|mis|nuestr[oa]s?|mon|ma|mes|notre|nos|mein|meine|meinen|meinem|meiner"
    r"|unser|unsere|unseren|unserem)"
)
# A word that says which one: "my best friend Priya", "my little brother Tom".
_KIND = r"(?:(?:best|closest|oldest|little|big|older|younger|elder|twin|ex-?|new|old)\s+)?"
# "The user's friend Anja", the template's word for anyone
_TEMPLATE_FRIEND = re.compile(r"The user's friend (?=[A-Z])")
# A fact opening with a name: "Val got diagnosed ...", "Leo only cares about dinosaurs."
_OPENING_NAME = re.compile(r"([A-Z][^\W\d_]+(?:-[A-Z][^\W\d_]+)?)(?:'s)?\s")
_NOT_NAMES = frozenset({"the", "a", "an", "this", "that", "it", "they", "he", "she", "we", "i"})


def relation_of(name: str, turns: Iterable[str]) -> str | None:
    """The relation the user last named ``name`` with in ``turns`` (their own words): "my
    girlfriend Anja", "our granddaughter Isla", "Anja, my girlfriend", "mum Val" at the
    start of a clause; None when no turn says one."""
    who = re.escape(fold(name))
    before = re.compile(rf"(?:\b{_OWNER}\s+|(?:^|[.!?,;:]\s*))({_KIND}{_RELATION})\s*,?\s+{who}\b")
    after = re.compile(rf"\b{who}\s*,\s*{_OWNER}\s+({_KIND}{_RELATION})\b")
    found: str | None = None
    for turn in turns:
        said = fold(turn)
        for pattern in (before, after):
            for match in pattern.finditer(said):
                found = match.group(1)
    return found


def with_relation(fact: str, turns: Iterable[str]) -> str:
    """``fact`` naming its person by the relation the user's ``turns`` give them: "The user's
    friend Anja ..." becomes "The user's freundin Anja ..." after "meine freundin Anja", "Val
    got diagnosed ..." becomes "The user's mum Val got diagnosed ..." after "my mum Val";
    ``fact`` as it is when no turn names a relation (or names "friend")."""
    turns = list(turns)
    template = _TEMPLATE_FRIEND.match(fact)
    if template is not None:
        name = _OPENING_NAME.match(fact, template.end())
        relation = relation_of(name.group(1), turns) if name else None
        if relation is None or relation == "friend":
            return fact
        return f"The user's {relation} {fact[template.end() :]}"
    name = _OPENING_NAME.match(fact)
    if name is None or fold(name.group(1)) in _NOT_NAMES:
        return fact
    relation = relation_of(name.group(1), turns)
    return fact if relation is None else f"The user's {relation} {fact}"
