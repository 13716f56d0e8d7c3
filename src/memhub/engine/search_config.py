"""How a search ranks and how much it returns, as one object.

Graphiti's search recipes are the model: one frozen value holds every knob of the ranking
(the fusion of signals, with the store's text ranking inside it), the reranking and the
result budget, so a caller names a whole way of searching at once and a benchmark tunes the
very object production runs. What a search looks for (query, scope, filters, Mem0's
``threshold``) is :class:`memhub.engine.retrieve.Search`, not this.

A call may override the knobs in :data:`CALL_KNOBS`; the REST search body and
``memhub search`` take the same ones (``tests/server/test_search_mirror.py`` fails when a
door leaves one out).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from memhub.engine.fusion import FusionConfig
from memhub.errors import UsageError

if TYPE_CHECKING:
    from memhub.config import MemhubSettings

__all__ = ["CALL_KNOBS", "SearchConfig"]

#: The knobs a single search call may set (Python keyword, REST field, CLI option).
CALL_KNOBS = ("min_score_ratio", "max_tokens", "excerpt_tokens", "rerank")


@dataclass(frozen=True)
class SearchConfig:
    """Every decision about how a search ranks and how much it returns.

    Attributes:
        fusion: How the signals are combined into one score, the text ranking and the
            cut-off relative to the best score (``fusion.min_score_ratio``) included.
        rerank: Re-order the best results with the configured reranker: True requires one,
            False never reranks, None reranks when one is configured.
        rerank_candidates: How many of the fused best results the reranker re-orders.
        max_tokens: Cap on the results' total length, estimated at four characters a token
            (None: no cap).
        excerpt_tokens: The longest text one result returns, in estimated tokens: a longer
            memory (or passage) returns its sentences sharing most of the query's words
            (:mod:`memhub.engine.excerpt`), and ``get(id)`` the whole; 0 returns it whole.
    """

    fusion: FusionConfig = field(default_factory=FusionConfig)
    rerank: bool | None = None
    rerank_candidates: int = 20
    max_tokens: int | None = None
    # 192 since issue 37: LongMemEval dev's top 10 a third shorter with the answers' words
    # kept (docs/retrieval.md, "Excerpts of long memories"); LoCoMo's turns are all shorter.
    excerpt_tokens: int = 192

    def __post_init__(self) -> None:
        # Refused before anything runs.
        tokens = self.max_tokens
        if tokens is not None and (type(tokens) is not int or tokens < 1):
            raise UsageError(f"max_tokens must be a positive integer, got {tokens!r}")
        excerpt = self.excerpt_tokens
        if type(excerpt) is not int or excerpt < 0:
            raise UsageError(f"excerpt_tokens must be 0 (whole) or more, got {excerpt!r}")
        if self.rerank is not None and not isinstance(self.rerank, bool):
            raise UsageError(f"rerank must be true, false or unset, got {self.rerank!r}")
        if isinstance(self.rerank_candidates, bool) or self.rerank_candidates < 1:
            raise UsageError(f"rerank_candidates must be >= 1, got {self.rerank_candidates!r}")

    @classmethod
    def from_settings(
        cls, settings: MemhubSettings, fusion: FusionConfig | None = None
    ) -> SearchConfig:
        """The defaults a deployment set (``MEMHUB_SEARCH_*``, ``MEMHUB_RERANK_CANDIDATES``),
        over ``fusion`` when given (its own ``min_score_ratio`` then stands)."""
        return cls(
            fusion=fusion or FusionConfig(min_score_ratio=settings.search_min_score_ratio),
            rerank_candidates=settings.rerank_candidates,
            max_tokens=settings.search_max_tokens,
            excerpt_tokens=settings.search_excerpt_tokens,
        )

    def for_call(
        self,
        *,
        min_score_ratio: float | None = None,
        max_tokens: int | None = None,
        excerpt_tokens: int | None = None,
        rerank: bool | None = None,
    ) -> SearchConfig:
        """This config with a call's knobs (:data:`CALL_KNOBS`) where the call gave them."""
        config = self
        if min_score_ratio is not None:
            config = replace(config, fusion=config.fusion.cut_at(min_score_ratio))
        if max_tokens is not None:
            config = replace(config, max_tokens=max_tokens)
        if excerpt_tokens is not None:
            config = replace(config, excerpt_tokens=excerpt_tokens)
        if rerank is not None:
            config = replace(config, rerank=rerank)
        return config
