"""What may authorise a model to remove a memory: the person's own request, about that fact.

A model's removal (a consolidation DELETE or SUPERSEDE, an agent's ``forget``, an MCP client's
``delete_memory``) is only a proposal. It stands when a turn the *user* said (the stored role
decides: never an assistant or tool turn, never metadata) supports it:

* **forget** (:func:`forget_request`): a sentence of the turn asks the assistant to forget,
  and that sentence shares a content word with the fact (:mod:`memhub.engine.grounding`).
  The request is a command or a polite question addressed to the assistant at the start of a
  clause ("Please forget ...", "Can you forget ...", "Olvida ...", "Oublie ...", "Vergiss
  ..."), in English, Spanish, French or German. Text in quotation marks is never read, a
  sentence that reports speech ("my boss said forget it") or sets a task ("translate:
  ...") asks nothing, a negated verb ("don't forget") asks the opposite, and the broader
  verbs (delete, remove, erase, drop; borrar, supprimer, löschen ...) count only next to a
  memory word ("from your memory", "what you know about"), since "remove the stain" is not
  about memory at all.
* **supersede** (:func:`supports_change`): the turn carries the new fact's news (a content
  word the old one lacks, or its negation) and is about the old fact (shares a content word
  with it, or the new fact does: "I moved to Berlin" for "lives in Paris" -> "lives in
  Berlin"). A turn that says nothing new ("Thanks!", "Where do I live?") supports nothing.

Both are lexical: they refuse what an attacker writes into a model's mouth, and sometimes a
real request worded otherwise. That is the cheaper mistake, because what they let through is
retired, not erased, and ``restore`` brings it back.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from memhub.engine.grounding import content_words

__all__ = ["forget_request", "supports_change"]

# Function words of the other three languages (English's are grounding's), and the vocabulary
# of forgetting and memory itself: a request and a fact sharing "forget" share nothing.
_OTHER_WORDS = frozenset(
    """
    el la los las un una unos unas de del al que y o pero con sin por para en es son era fue
    ser estar está están soy eres mi mis tu tus su sus me te se lo le les nos yo él ella ya muy
    más todo todos esto eso esta este ese esa favor por
    le la les un une des du de et ou mais avec sans pour par dans en est sont était être suis
    es mon ma mes ton ta tes son sa ses je tu il elle nous vous ils elles ce cet cette ces qui
    que quoi ne pas plus tout tous très moi toi lui leur
    der die das den dem des ein eine einen einem einer und oder aber mit ohne für von zu zur
    zum in im ist sind war bin bist mein meine meinen meiner dein deine deinen ich du er sie
    es wir ihr sich dass nicht nur auch sehr alles bitte
    forget forgets forgot forgotten forgetting delete deleted remove removed erase erased wipe
    drop purge unlearn remember remembering memory memories know knows knew keep store stored
    olvida olvidar olvides olvídate olvide borra borrar elimina eliminar quita recuerdes
    recordar memoria sabes oublie oublier oubliez oublies efface effacer supprime supprimer
    retire mémoire souviens vergiss vergessen vergisst lösche löschen entferne entfernen
    gedächtnis speicher merk merke merken weißt
    """.split()  # noqa: SIM905 (a list literal of 250 strings reads worse)
)

# Quoted text is someone else's words: removed before anything is read.
_QUOTED = re.compile(
    r'"[^"\n]*"|“[^”\n]*”|„[^“”\n]*[“”]|«[^»\n]*»|‘[^’\n]*’|`[^`\n]*`|(?<!\w)\'[^\'\n]*\'(?!\w)'
)
_SENTENCE = re.compile(r"[.!?;¿¡\n]+")
_CLAUSE = re.compile(
    r",|\b(?:and|but|then|also|y|pero|luego|et|mais|puis|und|aber|dann)\b", re.IGNORECASE
)

# A sentence that reports someone's words, or hands the assistant a text to work on, is not
# the person's request even when it contains one.
_REPORTING = re.compile(
    r"\b(said|says|say|told|tells|wrote|writes|asked|asks|ordered|instructed|according|reads"
    r"|translate|translation|repeat|quote|dijo|dice|decía|escribió|escribe|pidió|pide|según"
    r"|traduce|traducir|repite|dit|disait|écrit|écrivait|demandé|selon|tradui[st]|traduire"
    r"|répète|sagte|sagt|gesagt|schrieb|schreibt|geschrieben|bat|laut|übersetze|übersetzen"
    r"|wiederhole)\b",
    re.IGNORECASE,
)

# Words that may open a clause before the request itself ("OK so please forget ...").
_LEAD = (
    r"(?:(?:ok|okay|hey|hi|so|now|oh|well|actually|btw|please|kindly|just|pls|por favor|vale"
    r"|bueno|oye|s'il te plaît|s'il vous plaît|stp|svp|bon|alors|bitte|also|ok)\s+)*"
)

# The request at a clause's start: (verb pattern, needs a memory word nearby).
_STRONG = [
    # English
    r"forget\b",
    r"unlearn\b",
    r"(?:don'?t|do not|stop|no longer|never again)\s+(?:remember|remembering|keep|keeping"
    r"|store|storing|save|saving)\b",
    r"(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:forget|stop remembering)\b",
    r"i\s+(?:want|need|would like|'d like|d like)\s+you\s+to\s+(?:forget|stop remembering)\b",
    # Spanish
    r"(?:olvida|olvide|olvidad|olvídate|olvídese|olvidate)\b",
    r"(?:no\s+(?:recuerdes|recuerde|guardes|guarde)|deja\s+de\s+recordar|ya\s+no\s+recuerdes)\b",
    r"(?:puedes|podrías|puede|podría)\s+(?:por favor\s+)?olvidar\b",
    r"quiero\s+que\s+(?:olvides|olvide)\b",
    # French
    r"(?:oublie|oubliez)\b",
    r"(?:ne\s+(?:retiens|retenez|garde|gardez)\s+pas|arrête\s+de\s+(?:te\s+)?(?:souvenir|retenir))\b",
    r"(?:peux-tu|pouvez-vous|pourrais-tu|pourriez-vous|tu peux|vous pouvez)\s+oublier\b",
    r"(?:je\s+veux|j'aimerais|je\s+voudrais)\s+que\s+(?:tu|vous)\s+(?:oublies|oubliez)\b",
    # German
    r"(?:vergiss|vergesst|vergessen\s+sie)\b",
    r"(?:kannst|könntest|würdest)\s+du\b.*\bvergessen\b",
    r"(?:können|könnten|würden)\s+sie\b.*\bvergessen\b",
    r"(?:ich\s+möchte|ich\s+will)\s+dass\s+(?:du|sie)\b.*\b(?:vergisst|vergessen)\b",
    r"(?:merk|merke)\s+(?:dir|es|das)\b.*\bnicht\b",
]
_BROAD = [
    r"(?:delete|remove|erase|wipe|drop|purge|clear)\b",
    r"(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:delete|remove|erase|wipe|drop|purge)\b",
    r"i\s+(?:want|need|would like|'d like)\s+you\s+to\s+(?:delete|remove|erase|wipe|drop)\b",
    r"(?:borra|borre|elimina|elimine|quita|quite|suprime|suprima)\b",
    r"(?:puedes|podrías|puede|podría)\s+(?:borrar|eliminar|quitar|suprimir)\b",
    r"(?:efface|effacez|supprime|supprimez|retire|retirez)\b",
    r"(?:peux-tu|pouvez-vous|pourrais-tu|pourriez-vous)\s+(?:effacer|supprimer|retirer)\b",
    r"(?:lösche|lösch|löschen\s+sie|entferne|entfernen\s+sie)\b",
    r"(?:kannst|könntest|würdest|können|könnten|würden)\s+(?:du|sie)\b.*\b(?:löschen|entfernen)\b",
]
_STRONG_AT_START = re.compile(_LEAD + "(?:" + "|".join(_STRONG) + ")", re.IGNORECASE)
_BROAD_AT_START = re.compile(_LEAD + "(?:" + "|".join(_BROAD) + ")", re.IGNORECASE)

# "Forget it." / "Olvídalo." alone is "never mind"; "oublie pas", "vergiss nicht" = don't.
_DISMISSAL = re.compile(
    r"^\W*(?:forget\s+(?:about\s+)?it|never\s?mind|olvídalo|olvidalo|vergiss\s+es|laisse"
    r"\s+tomber)\W*$",
    re.IGNORECASE,
)
_NEGATED = re.compile(
    r"\b(?:oublie|oubliez|vergiss|vergesst)\b(?:\s+\w+){0,2}?\s+(?:pas|jamais|point|nicht|nie"
    r"|niemals|keinesfalls)\b",
    re.IGNORECASE,
)

# What the broad verbs must sit next to: a reference to what the assistant keeps.
_MEMORY_WORD = re.compile(
    r"\b(?:memory|memories|remember|notes|records?|profile|database|what you know|you know"
    r" about|you have on me|about me|that fact|this fact|that info|that information|memoria"
    r"|recuerdas|lo que sabes|tus datos|tus notas|sobre mí|ese dato|esa información|mémoire"
    r"|souviens|ce que tu sais|ce que vous savez|tes données|tes notes|sur moi|cette information"
    r"|gedächtnis|speicher|gespeichert|gemerkt|was du .* weißt|über mich|deinen notizen"
    r"|deinen daten|diese information)\b",
    re.IGNORECASE,
)


# A subordinate clause ("..., that I ...") belongs to the clause before it.
_SUBORDINATE = re.compile(r",\s*(?=(?:that|que|dass|qu')\b)", re.IGNORECASE)


def _unquoted(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("’", "'")
    return _SUBORDINATE.sub(" ", _QUOTED.sub(" ", text))


def _asks(sentence: str) -> bool:
    """Does this sentence (quotes removed) ask the assistant to forget something?"""
    if _REPORTING.search(sentence) or _NEGATED.search(sentence):
        return False
    for clause in _CLAUSE.split(sentence):
        clause = clause.strip()
        if not clause or _DISMISSAL.match(clause):
            continue
        if _STRONG_AT_START.match(clause):
            return True
        if _BROAD_AT_START.match(clause) and _MEMORY_WORD.search(sentence):
            return True
    return False


_OTHER_STEMS = content_words(" ".join(_OTHER_WORDS))  # stemmed once, not per call


def _words(text: str, names: Iterable[str] = ()) -> frozenset[str]:
    return content_words(text, names) - _OTHER_STEMS


def forget_request(turn: str, fact: str) -> bool:
    """Does ``turn`` (a user's words) ask to forget ``fact``?

    One of its sentences must ask the assistant to forget (see the module) and share a
    content word with the fact.
    """
    facts = _words(fact)
    if not facts:
        return False
    for sentence in _SENTENCE.split(_unquoted(turn)):
        if _asks(sentence) and _words(sentence) & facts:
            return True
    return False


_NEGATION = re.compile(
    r"\b(?:not|no|never|n't|nicht|kein|keine|nie|pas|jamais|plus|nunca|ya no|nada)\b|n't\b",
    re.IGNORECASE,
)


def supports_change(turns: Iterable[str], old: str, new: str, names: Iterable[str] = ()) -> bool:
    """Does one of the user's ``turns`` support replacing ``old`` by ``new``?

    The turn must carry what is new (a content word of ``new`` that ``old`` lacks; when only
    a negation differs, a negation), and be about the old fact: share a content word with
    it, or the new fact shares one with the old ("I moved to Berlin" replaces "Ada lives in
    Paris" by "Ada lives in Berlin"). The person's ``names`` do not count: every fact about
    Ada names her, so sharing "Ada" says nothing about which fact is meant.
    """
    names = tuple(names)
    old_words, new_words = _words(old, names), _words(new, names)
    news = new_words - old_words
    flips = bool(_NEGATION.search(new)) != bool(_NEGATION.search(old))
    same_subject = bool(old_words & new_words)
    for turn in turns:
        text = _unquoted(turn)
        said = _words(text, names)
        if not (said & old_words or same_subject):
            continue
        if said & news or (not news and flips and _NEGATION.search(text)):
            return True
    return False
