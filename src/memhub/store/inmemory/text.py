"""Full-text matching of the in-process store: an approximation of PostgreSQL's english search.

PostgreSQL indexes ``to_tsvector('english', memory)``. Here text is split into lower-cased
runs of letters and digits, PostgreSQL's english stop words are dropped and the rest go
through a light stemmer (inflections only: plurals, ``-ing``, ``-ed``, a final ``e``; none of
the derivational suffixes Snowball strips). A memory matches when it shares any term with the
query; :func:`bm25_scores` is the formula of :mod:`memhub.store.postgres.search`'s BM25 (the
default ranking), so ranks agree with PostgreSQL's whenever the two stemmers agree on the
words involved.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Final

__all__ = ["STOP_WORDS", "bm25_scores", "stem", "terms"]

# PostgreSQL's english.stop (the Snowball list), kept as one string as in that file: a list
# literal would take 127 lines.
STOP_WORDS: Final = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom
    this that these those am is are was were be been being have has had having do does did
    doing a an the and but if or because as until while of at by for with about against
    between into through during before after above below to from up down in out on off over
    under again further then once here there when where why how all any both each few more
    most other some such no nor not only own same so than too very s t can will just don
    should now
    """.split()  # noqa: SIM905
)

_WORD: Final = re.compile(r"[^\W_]+")
_VOWELS: Final = frozenset("aeiouy")
_NO_UNDOUBLE: Final = frozenset("aeiouylsz")


def stem(word: str) -> str:
    """A light english stemmer: ``hiking``, ``hiked``, ``hikes`` and ``hike`` all give ``hik``.

    Words of three letters or fewer and words holding digits are kept as they are.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("es") and word[-3] not in "aeo":
        word = word[:-1]  # boxes -> boxe -> box (below)
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ing") and len(word) >= 5 and _VOWELS.intersection(word[:-3]):
        word = _undouble(word[:-3])
    elif (
        word.endswith("ed")
        and not word.endswith("eed")
        and len(word) >= 5
        and _VOWELS.intersection(word[:-2])
    ):
        return _undouble(word[:-2])  # hike + d: the final e is already gone
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def _undouble(word: str) -> str:
    if len(word) >= 2 and word[-1] == word[-2] and word[-1] not in _NO_UNDOUBLE:
        return word[:-1]
    return word


def terms(text: str) -> Counter[str]:
    """The stemmed, stop-word-free terms of ``text`` with their frequencies."""
    return Counter(stem(word) for word in _WORD.findall(text.lower()) if word not in STOP_WORDS)


def bm25_scores(
    documents: Sequence[Counter[str]],
    query: Iterable[str],
    k1: float = 1.2,
    b: float = 0.75,
    around: Sequence[Counter[str] | None] | None = None,
    around_weight: float = 0.0,
) -> list[float | None]:
    """memhub's PostgreSQL BM25 for each document (None: no shared term).

    ``documents`` are all memories the search may return (the scope, after filters): their
    count is N. Term frequency counts as 1; a document's length is its number of distinct
    terms (``length(tsvector)``) and the average length is taken over the (term, document)
    matches, as the SQL does. ``around`` are the words of the memories said around each
    document (None: none): a term only they hold counts ``around_weight`` of its weight, and
    they count in the document's length; a term's document frequency counts the documents'
    own words. Unlike the SQL, no per-term or per-scope cap applies.
    """
    n = len(documents)
    extra = list(around) if around is not None else [None] * n
    keys = [doc.keys() | (more or {}).keys() for doc, more in zip(documents, extra, strict=True)]
    # a term no document holds of its own finds nothing, as the SQL's probe finds nothing
    found_own = {t: c for t in set(query) if (c := sum(1 for doc in documents if t in doc))}
    wanted = found_own.keys()
    pairs = [(t, i) for i, key in enumerate(keys) for t in wanted & key]
    scores: list[float | None] = [None] * n
    if not pairs:
        return scores
    avgdl = max(sum(len(keys[i]) for _, i in pairs) / len(pairs), 1.0)
    idf = {
        t: math.log(1 + (max(n, count) - count + 0.5) / (count + 0.5))
        for t, count in found_own.items()
    }
    total: dict[int, float] = {}
    for t, i in pairs:
        share = 1.0 if t in documents[i] else around_weight
        total[i] = total.get(i, 0.0) + idf[t] * share
    for i, weight in total.items():
        if weight > 0:
            scores[i] = weight * (k1 + 1) / (1 + k1 * (1 - b + b * len(keys[i]) / avgdl))
    return scores
