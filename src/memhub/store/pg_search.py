"""SQL for hybrid search: vector and full-text (BM25) candidates of one scope, in one round trip."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg import sql

from memhub.filters import Filter
from memhub.store.database import AsyncConn
from memhub.store.pg_bind import Params
from memhub.store.pg_memories import COLUMNS, N_COLUMNS, memories_where, record_from_row
from memhub.store.records import DEFAULT_TEXT_RANKING, Candidate, Scope, TextRanking

__all__ = ["search_candidates", "search_statement"]


def _text_query() -> sql.SQL:
    # plainto_tsquery ANDs every word; a question rarely shares all of them with its answer,
    # so the words are OR-ed and the ranking rewards documents matching more of them.
    return sql.SQL("replace(plainto_tsquery('english', {q})::text, ' & ', ' | ')::tsquery")


def _ts_rank_cte(where: sql.Composable) -> sql.Composable:
    return sql.SQL(
        "q AS (SELECT {tsq} AS tsq),"
        " txt_all AS ("
        "  SELECT m.id, m.hash, ts_rank(m.tsv, q.tsq) AS score FROM memories m, q"
        "  WHERE {where} AND m.tsv @@ q.tsq"
        ")"
    ).format(tsq=_text_query().format(q=sql.Placeholder("q")), where=where)


def _bm25_cte(where: sql.Composable) -> sql.Composable:
    # The query's lexemes come from the same to_tsvector() that built m.tsv (stop words out,
    # stemmed, deduplicated); each becomes a one-lexeme tsquery, quoted so any lexeme parses.
    # Per lexeme, a LIMITed GIN probe of term_cap + 1 rows tells whether the lexeme is rare
    # (all its matches fit under term_cap: they are all scored) or common. A common lexeme's
    # sample depends on the rows' physical order, so it is never used to find candidates: it
    # only adds its weight to the candidates found otherwise (txt_common, in the main query).
    # That keeps the result independent of insertion order with bounded work.
    # BM25 with tf = 1 is sum(idf) * (k1 + 1) / (1 + k1 * (1 - b + b * dl / avgdl)), where dl
    # is the memory's lexeme count and avgdl is averaged over the rare lexemes' matches.
    return sql.SQL(
        "terms AS ("
        "  SELECT t.lexeme, ('''' || replace(replace(t.lexeme, '\\', '\\\\'), '''', '''''')"
        "   || '''')::tsquery AS tq FROM unnest(to_tsvector('english', {q})) t"
        "), probe AS ("
        "  SELECT t.lexeme, h.id, h.hash, h.dl FROM terms t CROSS JOIN LATERAL ("
        "   SELECT m.id, m.hash, length(m.tsv) AS dl FROM memories m"
        "   WHERE {where} AND m.tsv @@ t.tq LIMIT {term_cap} + 1) h"
        "), n AS ("
        "  SELECT count(*)::float8 AS n FROM (SELECT 1 FROM memories m WHERE {where}"
        "   LIMIT {scope_cap}) s"
        "), idf AS ("
        "  SELECT p.lexeme, count(*) > {term_cap} AS common,"
        "   ln(1 + (greatest(max(n.n), count(*)) - count(*) + 0.5) / (count(*) + 0.5)) AS w"
        "  FROM probe p, n GROUP BY p.lexeme"
        "), hits AS ("
        "  SELECT p.lexeme, p.id, p.hash, p.dl, idf.w FROM probe p JOIN idf USING (lexeme)"
        "  WHERE NOT idf.common"
        "), avgdl AS (SELECT greatest(avg(dl), 1)::float8 AS a FROM hits),"
        " txt_all AS ("
        "  SELECT h.id, h.hash, sum(h.w) AS w, sum(h.w) * ({k1} + 1)"
        "   / (1 + {k1} * (1 - {b} + {b} * max(h.dl) / max(avgdl.a))) AS score"
        "  FROM hits h, avgdl GROUP BY h.id, h.hash"
        ")"
    ).format(
        q=sql.Placeholder("q"),
        where=where,
        term_cap=sql.Placeholder("term_cap"),
        scope_cap=sql.Placeholder("scope_cap"),
        k1=sql.Placeholder("k1"),
        b=sql.Placeholder("b"),
    )


# BM25 sums float weights in whatever order the aggregate sees them, so equal scores can
# differ in the last bits; rounding before ordering (and ordering ties by the text's hash,
# which does not depend on when it was added) makes the ranking a function of the data.
_TEXT_ORDER = "round(score::numeric, 9) DESC, hash"
_SCORE_DIGITS = 9


def _bm25_select() -> sql.SQL:
    # Every candidate gets its cosine similarity and its full BM25 score: the rare lexemes'
    # weights from txt_all plus the weights of the common lexemes it contains.
    return sql.SQL(
        ", txt_common AS ("
        "  SELECT m.id, sum(idf.w) AS w FROM memories m"
        "  JOIN (SELECT id FROM vec UNION SELECT id FROM txt) ids ON ids.id = m.id"
        "  JOIN idf ON idf.common JOIN terms t ON t.lexeme = idf.lexeme"
        "  WHERE m.tsv @@ t.tq GROUP BY m.id"
        ")"
        " SELECT {cols}, {sim},"
        " CASE WHEN coalesce(a.w, 0) + coalesce(c.w, 0) > 0 THEN"
        "  (coalesce(a.w, 0) + coalesce(c.w, 0)) * ({k1} + 1)"
        "  / (1 + {k1} * (1 - {b} + {b} * length(m.tsv) / avgdl.a)) END"
        ", {previous} FROM memories m"
        " JOIN (SELECT id FROM vec UNION SELECT id FROM txt) ids ON ids.id = m.id"
        " CROSS JOIN avgdl LEFT JOIN vec ON vec.id = m.id"
        " LEFT JOIN {rare} a ON a.id = m.id LEFT JOIN txt_common c ON c.id = m.id"
    )


# The turn before the memory's first source turn in its session: two index probes per
# candidate through conversation_context's (user_id, session_id, id) index.
_PREVIOUS_TURN = sql.SQL(
    "(SELECT p.id FROM conversation_context t JOIN LATERAL ("
    "  SELECT p.id FROM conversation_context p WHERE p.user_id = t.user_id"
    "  AND p.session_id = t.session_id AND p.id < t.id ORDER BY p.id DESC LIMIT 1) p ON TRUE"
    " WHERE t.id = m.source_turn_ids[1])"
)


def _plain_select() -> sql.SQL:
    return sql.SQL(
        " SELECT {cols}, {sim}, t.score, {previous} FROM memories m"
        " JOIN (SELECT id FROM vec UNION SELECT id FROM txt) ids ON ids.id = m.id"
        " LEFT JOIN vec ON vec.id = m.id LEFT JOIN {rare} t ON t.id = m.id"
    )


async def search_candidates(
    conn: AsyncConn,
    scope: Scope,
    text_query: str,
    vector: Any,
    k: int,
    filters: Filter | None,
    include_superseded: bool,
    *,
    ranking: TextRanking = DEFAULT_TEXT_RANKING,
) -> list[Candidate]:
    """Vector and full-text candidates in one round trip; ranks are computed here.

    The result depends only on the stored texts and vectors, not on the order they were added
    or on the plan PostgreSQL picks (ties are broken by the text's hash).
    """
    query, values = search_statement(
        scope, text_query, vector, k, filters, include_superseded, ranking
    )
    cur = await conn.execute(query, values)
    return _candidates(await cur.fetchall())


def search_statement(
    scope: Scope,
    text_query: str,
    vector: Any,
    k: int,
    filters: Filter | None,
    include_superseded: bool,
    ranking: TextRanking = DEFAULT_TEXT_RANKING,
) -> tuple[sql.Composed, dict[str, Any]]:
    """The statement :func:`search_candidates` runs and its parameters (bench/ EXPLAINs it)."""
    params = Params()
    where = memories_where(scope, filters, include_superseded, params)
    bm25 = ranking.method == "bm25"
    text_cte = _bm25_cte(where) if bm25 else _ts_rank_cte(where)
    select = _bm25_select() if bm25 and ranking.score_all else _plain_select()
    query = sql.SQL(
        "WITH vec AS ("
        "  SELECT m.id, 1 - (m.embedding <=> {v}) AS sim FROM memories m"
        "  WHERE {where} AND m.embedding IS NOT NULL ORDER BY m.embedding <=> {v} LIMIT {k}"
        "), {text_cte},"
        " txt AS (SELECT id, score FROM txt_all ORDER BY {text_order} LIMIT {k})"
    ).format(
        v=sql.Placeholder("v"),
        where=where,
        k=sql.Placeholder("k"),
        text_cte=text_cte,
        text_order=sql.SQL(_TEXT_ORDER),
    ) + select.format(
        sim=sql.SQL("1 - (m.embedding <=> {v})" if ranking.score_all else "vec.sim").format(
            v=sql.Placeholder("v")
        ),
        rare=sql.Identifier("txt_all" if ranking.score_all else "txt"),
        cols=COLUMNS,
        previous=_PREVIOUS_TURN,
        k1=sql.Placeholder("k1"),
        b=sql.Placeholder("b"),
    )
    values = {
        "v": np.asarray(vector, dtype=np.float32),
        "k": k,
        "q": text_query,
        "term_cap": ranking.term_cap,
        "scope_cap": ranking.scope_cap,
        "k1": ranking.k1,
        "b": ranking.b,
        **params.values,
    }
    return query, values


def _candidates(rows: Sequence[Sequence[Any]]) -> list[Candidate]:
    sim, txt, previous, hash_ = N_COLUMNS, N_COLUMNS + 1, N_COLUMNS + 2, 5
    # Ordered by hash first, so equal scores rank in an order that only depends on the texts.
    cleaned = sorted(
        (
            (*r[:sim], None if r[sim] is None else float(r[sim]), _rounded(r[txt]), r[previous])
            for r in rows
        ),
        key=lambda r: str(r[hash_]),
    )
    by_vec = sorted((r for r in cleaned if r[sim] is not None), key=lambda r: -r[sim])
    by_txt = sorted((r for r in cleaned if r[txt] is not None), key=lambda r: -r[txt])
    vec_rank = {r[0]: n for n, r in enumerate(by_vec, start=1)}
    txt_rank = {r[0]: n for n, r in enumerate(by_txt, start=1)}
    return [
        Candidate(
            record=record_from_row(r),
            vector_similarity=r[sim],
            vector_rank=vec_rank.get(r[0]),
            text_score=r[txt],
            text_rank=txt_rank.get(r[0]),
            previous_turn_id=r[previous],
        )
        for r in cleaned
    ]


def _rounded(score: Any) -> float | None:
    return None if score is None else round(float(score), _SCORE_DIGITS)
