"""SQL for hybrid search of one scope: a full-text (BM25) statement and a vector statement.

The full-text statement needs no vector, so a search (:mod:`memhub.engine.retrieve`) runs it
while the query is being embedded; the vector statement then adds the nearest memories and
scores every candidate on both signals; ranking them is the engine's. The full-text statement
probes ``memory_words``, the narrow copy of each memory's words kept by triggers (migration
0019), whose pages hold ten times more rows than memories' (those carry the vectors); only the
matches the probes return are then read on ``memories``, with the words of the memories said
around each (docs/retrieval.md, "The words said around a memory").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg import sql

from memhub.filters import Filter
from memhub.store.postgres.bind import Params
from memhub.store.postgres.database import AsyncConn
from memhub.store.postgres.filters import compile_filter
from memhub.store.postgres.memories import (
    COLUMNS,
    N_COLUMNS,
    memories_where,
    previous_turn,
    record_from_row,
)
from memhub.store.records import (
    DEFAULT_TEXT_RANKING,
    TEXT_SCORE_DIGITS,
    PassageHit,
    RawCandidate,
    Scope,
    TextHits,
    TextRanking,
)

__all__ = [
    "TextHits",
    "text_hits",
    "text_hits_from_row",
    "text_statement",
    "vector_candidates",
    "vector_statement",
]


def text_hits_from_row(row: Sequence[Any]) -> TextHits:
    """The hits from the full-text statement's one row."""
    ids, scores, lexemes, weights, avgdl = row
    return TextHits(
        ids=list(ids),
        scores=[float(s) for s in scores],
        lexemes=list(lexemes),
        weights=[float(w) for w in weights],
        avgdl=float(avgdl) if avgdl is not None else 1.0,
    )


def _text_query() -> sql.SQL:
    # plainto_tsquery ANDs every word; a question rarely shares all of them with its answer,
    # so the words are OR-ed and the ranking rewards documents matching more of them.
    return sql.SQL("replace(plainto_tsquery('english', {q})::text, ' & ', ' | ')::tsquery")


# A lexeme as a one-lexeme tsquery, quoted so that any lexeme parses.
_LEXEME_QUERY = "(('''' || replace(replace({0}, '\\', '\\\\'), '''', '''''') || '''')::tsquery)"


@dataclass(frozen=True)
class _Words:
    """Where the full-text statement finds a scope's words: ``FROM {source} WHERE {where}``.

    ``w`` is ``memory_words``; with filters, each match is joined to its memories row ``m``,
    since filters may read any column.
    """

    source: sql.Composable
    where: sql.Composable


def _words(
    scope: Scope, filters: Filter | None, include_superseded: bool, params: Params
) -> _Words:
    where = memories_where(scope, None, include_superseded, params, alias="w", retired_column=False)
    if filters is None:
        return _Words(sql.SQL("memory_words w"), where)
    return _Words(
        sql.SQL("memory_words w JOIN memories m ON m.id = w.id"),
        sql.SQL("{} AND {}").format(where, compile_filter(filters, params, "m")),
    )


def _ts_rank_ctes(words: _Words) -> sql.Composable:
    return sql.SQL(
        "q AS (SELECT {tsq} AS tsq),"
        " txt_all AS ("
        "  SELECT w.id, w.hash, ts_rank(w.tsv, q.tsq) AS score FROM {source}, q"
        "  WHERE {words} AND w.tsv @@ q.tsq"
        "), idf AS (SELECT NULL::text AS lexeme, NULL::float8 AS w WHERE FALSE),"
        " avgdl AS (SELECT 1::float8 AS a)"
    ).format(
        tsq=_text_query().format(q=sql.Placeholder("q")), source=words.source, words=words.where
    )


# The turn before the memory's first source turn in its session: stored with the memory when
# it was added (0: none), looked up for memories stored before migration 0018 or imported.
_PREVIOUS_TURN = sql.SQL(
    "CASE WHEN m.previous_turn_id IS NOT NULL THEN nullif(m.previous_turn_id, 0) ELSE {lookup} END"
).format(lookup=previous_turn(sql.SQL("m.source_turn_ids[1]")))


# The memories said around a memory ``at`` (a memory_words row, or a row with its two
# columns): those of its first source turn's session whose first source turn stands within
# neighbour_turns of its own (migration 0029's positions), one range probe of the
# memory_words_turn_position index. The turn itself is not around it (its other memories say
# the same), nor is anything around a memory that cites no turn.
_AROUND = sql.SQL(
    "{alias}.first_turn_session = {at}.first_turn_session"
    " AND {alias}.first_turn_position BETWEEN {at}.first_turn_position - {turns}"
    " AND {at}.first_turn_position + {turns}"
    " AND {alias}.first_turn_position <> {at}.first_turn_position"
)


def _around(alias: str, at: str) -> sql.Composed:
    """``_AROUND`` for the memory_words rows ``alias`` around the memory ``at``."""
    return _AROUND.format(
        alias=sql.Identifier(alias),
        at=sql.Identifier(at),
        turns=sql.Placeholder("neighbour_turns"),
    )


# The words said around memory ``{at}``, an expression (a memory's neighbours depend on
# nothing else, so an episode and its facts read the same): for each position around it, the
# current memory of the scope said there (an episode before a fact of the same turn, then the
# content hash), unless it has more distinct words than neighbour_max, united by
# memhub_tsvector_union (an aggregate of tsvector's ||, migration 0028); '' when none, or
# when the weight is 0. ``{where}`` is the scope's condition on ``pm``: the words must be the
# same user's, and a retired, deleted or expired memory lends none (search no longer finds
# what was forgotten).
# Evaluated for each memory on its own index probe, so the plan does not depend on table
# statistics (a new database has none for its first minute); the inner OFFSET 0 keeps the
# probe on memory_words_turn_position, which the scope's index otherwise displaced.
_AROUND_WORDS = sql.SQL(
    "coalesce((SELECT memhub_tsvector_union(n.tsv) FROM ("
    "  SELECT DISTINCT ON (pm.first_turn_position) strip(pm.tsv) AS tsv"
    "  FROM (SELECT * FROM memory_words pm WHERE {around} OFFSET 0) pm WHERE {where}"
    "  AND (pm.expires_at IS NULL OR pm.expires_at > now())"
    "  ORDER BY pm.first_turn_position, pm.role IS NULL, pm.hash) n"
    " WHERE length(n.tsv) <= {max} AND {weight} > 0), ''::tsvector)"
)


def _around_words(where: sql.Composable, at: str) -> sql.Composable:
    """``_AROUND_WORDS`` for the memory ``at``, with the scope's condition on ``pm``."""
    return _AROUND_WORDS.format(
        around=_around("pm", at),
        where=where,
        weight=sql.Placeholder("neighbour_weight"),
        max=sql.Placeholder("neighbour_max"),
    )


# The query's lexemes come from the same to_tsvector() that built tsv (stop words out,
# stemmed, deduplicated). Per lexeme, a LIMITed GIN probe of term_cap + 1 rows tells
# whether the lexeme is rare (all its matches fit under term_cap: they are all scored) or
# common. A common lexeme's sample depends on the rows' physical order, so it never finds
# candidates: it only adds its weight to the candidates found otherwise (the vector
# statement checks every candidate against every lexeme). That keeps the result
# independent of insertion order with bounded work.
# A rare lexeme also finds the memories said around its matches (within neighbour_turns
# turns of the match's first source turn): their words include the match's, each worth
# neighbour_weight of its weight where their own words do not hold it.
# BM25 with tf = 1 is sum(idf) * (k1 + 1) / (1 + k1 * (1 - b + b * dl / avgdl)), where dl
# is the memory's lexeme count with its neighbours', and avgdl is averaged over the rare
# lexemes' matches. Each hit keeps its words (``own``, and ``words`` with its neighbours') for
# its full score (``_FULL_SCORES``), so they are not joined back.
_BM25_CTES = sql.SQL(
    "terms AS ("
    "  SELECT t.lexeme, {tq} AS tq FROM unnest(to_tsvector('english', {q})) t"
    "), probe AS ("
    "  SELECT t.lexeme, h.id FROM terms t CROSS JOIN LATERAL ("
    "   SELECT w.id FROM {source}"
    "   WHERE {words} AND w.tsv @@ t.tq LIMIT {term_cap} + 1) h"
    "), n AS ("
    "  SELECT count(*)::float8 AS n FROM (SELECT 1 FROM memories m WHERE {where}"
    "   LIMIT {scope_cap}) s"
    "), idf AS ("
    "  SELECT p.lexeme, count(*) > {term_cap} AS common,"
    "   ln(1 + (greatest(max(n.n), count(*)) - count(*) + 0.5) / (count(*) + 0.5)) AS w"
    "  FROM probe p, n GROUP BY p.lexeme"
    "), rare AS ("
    "  SELECT idf.lexeme, idf.w, terms.tq FROM idf JOIN terms USING (lexeme)"
    "  WHERE NOT idf.common"
    "), matched AS ("
    "  SELECT DISTINCT p.id FROM probe p JOIN rare USING (lexeme)"
    "), matched_at AS MATERIALIZED ("
    "  SELECT x.id, x.first_turn_session, x.first_turn_position"
    "  FROM matched JOIN memory_words x ON x.id = matched.id"
    "), found AS ("
    "  SELECT * FROM matched_at UNION"
    "  SELECT y.id, y.first_turn_session, y.first_turn_position FROM ("
    "   SELECT DISTINCT first_turn_session, first_turn_position FROM matched_at"
    "   WHERE first_turn_session IS NOT NULL AND {weight} > 0) a CROSS JOIN LATERAL ("
    "   SELECT y.* FROM memory_words y WHERE {around_matched} OFFSET 0) y"
    "), found_memories AS ("
    "  SELECT m.id, m.hash, m.tsv, f.first_turn_session, f.first_turn_position"
    "  FROM found f JOIN memories m ON m.id = f.id WHERE {where}"
    "), keyed AS ("
    "  SELECT k.id, k.hash, k.tsv AS own, l.around, k.tsv || l.around AS words"
    "  FROM found_memories k CROSS JOIN LATERAL (SELECT {around_words} AS around OFFSET 0) l"
    "), hits AS ("
    "  SELECT k.id, k.hash, k.own, k.words, length(k.words) AS dl,"
    "   rare.w * CASE WHEN k.own @@ rare.tq THEN 1 ELSE {weight} END AS w"
    "  FROM keyed k JOIN rare ON k.own @@ rare.tq OR k.around @@ rare.tq"
    "), avgdl AS (SELECT greatest(avg(dl), 1)::float8 AS a FROM hits),"
    " txt_all AS ("
    "  SELECT h.id, h.hash, sum(h.w) * ({k1} + 1)"
    "   / (1 + {k1} * (1 - {b} + {b} * max(h.dl) / max(avgdl.a))) AS score,"
    "   (array_agg(h.own))[1] AS own, (array_agg(h.words))[1] AS words"
    "  FROM hits h, avgdl GROUP BY h.id, h.hash"
    ")"
)


def _bm25_ctes(
    words: _Words, where: sql.Composable, neighbour_where: sql.Composable
) -> sql.Composable:
    """The BM25 CTEs (``_BM25_CTES``) of a scope: ``where`` on ``memories m``,
    ``neighbour_where`` on the neighbours ``pm`` whose words each memory reads
    (``_around_words``)."""
    return _BM25_CTES.format(
        tq=sql.SQL(_LEXEME_QUERY).format(sql.SQL("t.lexeme")),
        q=sql.Placeholder("q"),
        source=words.source,
        words=words.where,
        where=where,
        around_matched=_around("y", "a"),
        around_words=_around_words(neighbour_where, "k"),
        term_cap=sql.Placeholder("term_cap"),
        scope_cap=sql.Placeholder("scope_cap"),
        weight=sql.Placeholder("neighbour_weight"),
        k1=sql.Placeholder("k1"),
        b=sql.Placeholder("b"),
    )


def _full_bm25(
    own: sql.Composable, words: sql.Composable, lexemes: sql.Composable, avgdl: sql.Composable
) -> sql.Composed:
    """A memory's full BM25 score, as both statements compute it: the weight of each query
    lexeme (``lexemes``: rows ``(lexeme, w)``, rare or common) its ``words`` (its ``own`` and
    its neighbours') hold, at neighbour_weight where only the neighbours' do, length-normalised
    by ``words`` against ``avgdl``, the rare lexemes' average length; NULL when it holds none."""
    return sql.SQL(
        "(SELECT CASE WHEN sum(lx.w) > 0"
        "  THEN sum(lx.w * CASE WHEN {own} @@ {tq} THEN 1 ELSE {weight} END) * ({k1} + 1)"
        "  / (1 + {k1} * (1 - {b} + {b} * length({words}) / {avgdl})) END"
        " FROM {lexemes} lx(lexeme, w) WHERE {words} @@ {tq})"
    ).format(
        own=own,
        words=words,
        lexemes=lexemes,
        avgdl=avgdl,
        tq=sql.SQL(_LEXEME_QUERY).format(sql.SQL("lx.lexeme")),
        weight=sql.Placeholder("neighbour_weight"),
        k1=sql.Placeholder("k1"),
        b=sql.Placeholder("b"),
    )


# The k best are chosen by their rare lexemes; the score returned for each is its full BM25,
# every query lexeme's weight, rare or common, as the vector statement scores the other
# candidates (``_full_bm25``), with the neighbours' words the text statement has already read:
# the vector statement then reads neighbours only for the candidates the text side did not
# return.
_FULL_SCORES = sql.SQL("SELECT {} FROM txt t").format(
    _full_bm25(
        sql.SQL("t.own"),
        sql.SQL("t.words"),
        sql.SQL("(SELECT lexeme, w FROM idf)"),
        sql.SQL("(SELECT a FROM avgdl)"),
    )
)

# BM25 sums float weights in whatever order the aggregate sees them, so equal scores can
# differ in the last bits; rounding before ordering (and ordering ties by the text's hash,
# which does not depend on when it was added) makes the choice of the best k a function of
# the data. The engine ranks what the statements return by the same rule (retrieve.rank).
_TEXT_ORDER = sql.SQL("round(score::numeric, {digits}) DESC, hash").format(
    digits=sql.Placeholder("digits")
)


def text_statement(
    scope: Scope,
    text_query: str,
    k: int,
    filters: Filter | None,
    include_superseded: bool,
    ranking: TextRanking = DEFAULT_TEXT_RANKING,
) -> tuple[sql.Composed, dict[str, Any]]:
    """The full-text statement and its parameters: one row that makes a :class:`TextHits`."""
    params = Params()
    where = memories_where(scope, filters, include_superseded, params)
    words = _words(scope, filters, include_superseded, params)
    if ranking.method == "bm25":
        ctes = _bm25_ctes(words, where, _neighbour_where(scope, params))
    else:
        ctes = _ts_rank_ctes(words)
    query = sql.SQL(
        "WITH {ctes}, txt AS (SELECT *, row_number() OVER (ORDER BY {order}) AS n"
        " FROM txt_all ORDER BY {order} LIMIT {k})"
        " SELECT ARRAY(SELECT id FROM txt ORDER BY n), ARRAY({scores} ORDER BY t.n),"
        " ARRAY(SELECT lexeme FROM idf ORDER BY lexeme), ARRAY(SELECT w FROM idf ORDER BY lexeme),"
        " (SELECT a FROM avgdl)"
    ).format(
        ctes=ctes,
        order=_TEXT_ORDER,
        k=sql.Placeholder("k"),
        scores=_FULL_SCORES if ranking.method == "bm25" else sql.SQL("SELECT t.score FROM txt t"),
    )
    values = {
        "k": k,
        "q": text_query,
        "digits": TEXT_SCORE_DIGITS,
        "term_cap": ranking.term_cap,
        "scope_cap": ranking.scope_cap,
        "k1": ranking.k1,
        "b": ranking.b,
        **_neighbour_values(ranking),
        **params.values,
    }
    return query, values


def _neighbour_where(scope: Scope, params: Params) -> sql.Composable:
    # The neighbours are read in the search's scope, current, whatever the filters.
    return memories_where(scope, None, False, params, alias="pm")


def _neighbour_values(ranking: TextRanking) -> dict[str, Any]:
    return {
        "neighbour_weight": ranking.neighbour_words_weight,
        "neighbour_max": ranking.neighbour_words_max,
        "neighbour_turns": ranking.neighbour_words_turns,
    }


# Every candidate's full BM25 score (``_full_bm25``): its neighbours' words are ``pw``'s, the
# query's lexemes, weights and average length the full-text statement's.
_CANDIDATE_BM25 = _full_bm25(
    sql.SQL("m.tsv"),
    sql.SQL("(m.tsv || coalesce(pw.tsv, ''::tsvector))"),
    sql.SQL("unnest({}::text[], {}::float8[])").format(
        sql.Placeholder("lexemes"), sql.Placeholder("weights")
    ),
    sql.Placeholder("avgdl"),
)


# Without rescoring, a candidate has the signals of the retrievers that found it: the text
# hits' scores come as two parallel arrays, joined to the candidates once (``given``) rather
# than unnested again for each candidate.
_GIVEN_SCORE = sql.SQL("given.score")
# A long memory's vector score is its best passage's when that is nearer (migration 0026);
# greatest() ignores the NULL of a memory without passages, whose score is unchanged.
_SIM = sql.SQL("greatest(1 - (m.embedding <=> {v}), ps.sim)").format(v=sql.Placeholder("v"))
_VECTOR_ONLY_SIM = sql.SQL("CASE WHEN m.id IN (SELECT id FROM near) THEN {sim} END").format(
    sim=_SIM
)
# The passage of each candidate nearest the query (none for a memory that has no passages).
# The first passage's vector is the memory's own, stored once (memories.passage_rows).
_BEST_PASSAGE = sql.SQL(
    "LEFT JOIN LATERAL (SELECT p.ordinal, p.start_char, p.end_char,"
    " 1 - (coalesce(p.embedding, m.embedding) <=> {v}) AS sim"
    " FROM memory_passages p WHERE p.memory_id = m.id"
    " ORDER BY coalesce(p.embedding, m.embedding) <=> {v}, p.ordinal LIMIT 1) ps ON TRUE"
).format(v=sql.Placeholder("v"))


_VECTOR_QUERY = (
    "WITH vec AS ("
    "  SELECT m.id FROM memories m"
    "  WHERE {where} AND m.embedding IS NOT NULL ORDER BY m.embedding <=> {v} LIMIT {k}"
    # The memories of the k nearest passages: a long memory found by its tail.
    "), pvec AS ("
    "  SELECT p.memory_id AS id FROM memory_passages p JOIN memories m ON m.id = p.memory_id"
    "  WHERE {where} ORDER BY p.embedding <=> {v} LIMIT {k}"
    "), near AS (SELECT id FROM vec UNION SELECT id FROM pvec),"
    " candidates AS (SELECT id FROM near UNION SELECT unnest({txt_ids}::uuid[])),"
    " given AS MATERIALIZED ("
    "  SELECT x.id, x.score FROM unnest({txt_ids}::uuid[], {txt_scores}::float8[]) x(id, score)"
    " )"
    # The text hits are checked against the scope again: a memory may have been deleted
    # or superseded between the two statements.
    " SELECT {cols}, {sim}, {text_score}, {previous}, ps.ordinal, ps.start_char, ps.end_char"
    " FROM memories m JOIN candidates ids ON ids.id = m.id {best_passage}"
    " LEFT JOIN given ON given.id = m.id {lent_join}"
    " WHERE {where}"
)


# The neighbours' words of every candidate the text statement did not score, for its full
# BM25 score (the text hits come with theirs).
_VECTOR_AROUND = sql.SQL(
    "LEFT JOIN LATERAL (SELECT {around_words} AS tsv FROM memory_words mw"
    " WHERE mw.id = m.id AND NOT m.id = ANY({txt_ids}::uuid[]) OFFSET 0) pw ON TRUE"
)


def vector_statement(
    scope: Scope,
    vector: Any,
    k: int,
    filters: Filter | None,
    include_superseded: bool,
    hits: TextHits,
    ranking: TextRanking = DEFAULT_TEXT_RANKING,
) -> tuple[sql.Composed, dict[str, Any]]:
    """The vector statement and its parameters: the ``k`` nearest plus ``hits``, scored."""
    params = Params()
    where = memories_where(scope, filters, include_superseded, params)
    rescore = ranking.method == "bm25" and ranking.score_all
    query = sql.SQL(_VECTOR_QUERY).format(
        where=where,
        v=sql.Placeholder("v"),
        k=sql.Placeholder("k"),
        cols=COLUMNS,
        sim=_SIM if ranking.score_all else _VECTOR_ONLY_SIM,
        best_passage=_BEST_PASSAGE,
        text_score=sql.SQL("coalesce({}, {})").format(_GIVEN_SCORE, _CANDIDATE_BM25)
        if rescore
        else _GIVEN_SCORE,
        lent_join=_VECTOR_AROUND.format(
            around_words=_around_words(_neighbour_where(scope, params), "mw"),
            txt_ids=sql.Placeholder("txt_ids"),
        )
        if rescore
        else sql.SQL(""),
        previous=_PREVIOUS_TURN,
        txt_ids=sql.Placeholder("txt_ids"),
        txt_scores=sql.Placeholder("txt_scores"),
    )
    values = {
        "v": np.asarray(vector, dtype=np.float32),
        "k": k,
        "txt_ids": hits.ids,
        "txt_scores": hits.scores,
        "lexemes": hits.lexemes,
        "weights": hits.weights,
        "avgdl": hits.avgdl,
        "k1": ranking.k1,
        "b": ranking.b,
        **_neighbour_values(ranking),
        **params.values,
    }
    return query, values


async def text_hits(
    conn: AsyncConn,
    scope: Scope,
    text_query: str,
    k: int,
    filters: Filter | None,
    include_superseded: bool,
    ranking: TextRanking = DEFAULT_TEXT_RANKING,
) -> TextHits:
    """Run the full-text statement (it needs no vector: run it while the query is embedded)."""
    query, values = text_statement(scope, text_query, k, filters, include_superseded, ranking)
    # Not prepared: a generic plan cannot tell a scope of 80 memories from one of 200,000, and
    # the probes' best index differs between them (measured: docs/retrieval.md, section 5).
    cur = await conn.execute(query, values, prepare=False)
    row = await cur.fetchone()
    assert row is not None  # an aggregate-only SELECT returns exactly one row
    return text_hits_from_row(row)


async def vector_candidates(
    conn: AsyncConn,
    scope: Scope,
    vector: Any,
    k: int,
    filters: Filter | None,
    include_superseded: bool,
    hits: TextHits,
    ranking: TextRanking = DEFAULT_TEXT_RANKING,
) -> list[RawCandidate]:
    """Run the vector statement: the candidates with both signals, unranked (the engine ranks)."""
    query, values = vector_statement(scope, vector, k, filters, include_superseded, hits, ranking)
    # Not prepared, as text_hits: an exact scan suits a small scope, the HNSW index a big one.
    cur = await conn.execute(query, values, prepare=False)
    return [_candidate(row) for row in await cur.fetchall()]


def _candidate(row: Sequence[Any]) -> RawCandidate:
    sim, txt, previous = row[N_COLUMNS], row[N_COLUMNS + 1], row[N_COLUMNS + 2]
    ordinal, start, end = row[N_COLUMNS + 3 : N_COLUMNS + 6]
    return RawCandidate(
        record=record_from_row(row),
        vector_similarity=None if sim is None else float(sim),
        text_score=None if txt is None else float(txt),
        previous_turn_id=previous,
        passage=None if ordinal is None else PassageHit(ordinal, start, end),
    )
