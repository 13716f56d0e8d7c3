"""A second ranking pass over search's fused top candidates: a cross-encoder or a server.

``search(..., rerank=True)`` (Mem0 2.x's flag) hands the best ``candidates`` fused results to
the configured :class:`Reranker`, which scores each (query, memory) pair; those results are
re-ordered by that score and the rest keep their fused order after them. Off unless a
reranker is configured (``MEMHUB_RERANKER``): no trained cross-encoder ships in a package
memhub can depend on, and the measured cost and gain are in docs/retrieval.md.

Two rerankers:

- :class:`CrossEncoderReranker`: a local cross-encoder directory (``tokenizer.json`` and an
  ONNX export, e.g. of ``cross-encoder/ms-marco-MiniLM-L-6-v2`` or ``BAAI/bge-reranker-base``)
  on onnxruntime in-process, one logit per pair.
- :class:`HttpReranker`: ``POST {base_url}/rerank`` in the shape Hugging Face TEI serves
  (``{"query", "texts"}`` -> ``[{"index", "score"}]``) or the one vLLM, Jina and Cohere
  serve (``{"model", "query", "documents"}`` -> ``{"results": [{"index",
  "relevance_score"}]}``).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from memhub._cpu import run_cpu
from memhub.config import MemhubSettings
from memhub.embed.onnx_encoder import (
    batches,
    load_session,
    load_tokenizer,
    model_inputs,
    onnxruntime_errors,
)
from memhub.engine.fusion import ScoredCandidate
from memhub.errors import (
    ConfigurationError,
    ProviderError,
    ProviderHTTPError,
    ProviderOutputError,
    UsageError,
)

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "CrossEncoderReranker",
    "HttpReranker",
    "Reranker",
    "chosen_reranker",
    "rerank_scored",
    "reranker_for",
    "reranker_from_settings",
]

RerankApi = Literal["tei", "cohere"]


class Reranker(Protocol):
    """Scores (query, passage) pairs; a higher score is more relevant."""

    async def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in order."""
        ...


async def rerank_scored(
    reranker: Reranker | None, query: str, scored: Sequence[ScoredCandidate], candidates: int
) -> list[ScoredCandidate]:
    """Re-order the best ``candidates`` of ``scored`` by the reranker; the rest follow.

    With no reranker, ``scored`` comes back as it is.

    Scores stay in [0, 1] and keep the returned order: a reranked result's score is its
    relevance (passed through a logistic when the reranker returns logits), and a result
    after the reranked ones keeps its fused score, capped at the last reranked score. Ties
    keep the fused order, so the ranking stays deterministic.
    """
    head, tail = list(scored[:candidates]), list(scored[candidates:])
    if reranker is None or not head:
        return [*head, *tail]
    relevance = await reranker.score(query, [s.candidate.record.memory for s in head])
    if len(relevance) != len(head):
        raise ProviderOutputError(f"the reranker returned {len(relevance)} scores for {len(head)}")
    squash = any(not 0.0 <= r <= 1.0 for r in relevance)
    values = [_logistic(r) if squash else r for r in relevance]
    order = sorted(range(len(head)), key=lambda i: (-values[i], i))
    ranked = [replace(head[i], score=values[i]) for i in order]
    floor = ranked[-1].score
    return ranked + [replace(s, score=min(s.score, floor)) for s in tail]


def reranker_for(settings: MemhubSettings) -> Reranker | None:
    """The settings' reranker, built once per distinct configuration (a loaded model is kept)."""
    key = (
        settings.reranker,
        settings.reranker_model,
        settings.reranker_base_url,
        None if settings.reranker_api_key is None else settings.reranker_api_key.get_secret_value(),
        settings.embedder_threads,
    )
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = reranker_from_settings(settings)
        return _CACHE[key]


_CACHE: dict[tuple[object, ...], Reranker | None] = {}
_CACHE_LOCK = threading.Lock()


def reranker_from_settings(settings: MemhubSettings) -> Reranker | None:
    """The reranker the settings configure, or None (``MEMHUB_RERANKER`` unset).

    Raises:
        ConfigurationError: An unknown kind, or a setting it needs is missing.
    """
    kind = (settings.reranker or "").strip().lower()
    if not kind or kind == "none":
        return None
    model = settings.reranker_model
    if kind in ("cross-encoder", "cross_encoder", "local"):
        if not model:
            raise ConfigurationError(
                "MEMHUB_RERANKER=cross-encoder needs MEMHUB_RERANKER_MODEL, the directory"
            )
        return CrossEncoderReranker(model, threads=settings.embedder_threads)
    if kind in ("tei", "cohere", "vllm", "jina"):
        if not settings.reranker_base_url:
            raise ConfigurationError(
                f"MEMHUB_RERANKER={kind} needs MEMHUB_RERANKER_BASE_URL (the server's root)"
            )
        key = settings.reranker_api_key
        return HttpReranker(
            settings.reranker_base_url,
            model=model,
            api="tei" if kind == "tei" else "cohere",
            api_key=None if key is None else key.get_secret_value(),
        )
    raise ConfigurationError(
        f"unknown reranker {settings.reranker!r}; known: cross-encoder, tei, cohere, vllm, jina"
    )


def chosen_reranker(rerank: bool | None, settings: MemhubSettings) -> Reranker | None:
    """The reranker a search uses: Mem0's flag over the configured one (None: no pass).

    Raises:
        UsageError: ``rerank=True`` and no reranker is configured.
    """
    if rerank is False:
        return None
    reranker = reranker_for(settings)
    if rerank and reranker is None:
        raise UsageError(
            "rerank=True but no reranker is configured: set MEMHUB_RERANKER (cross-encoder, "
            "tei, cohere, vllm) and MEMHUB_RERANKER_MODEL / MEMHUB_RERANKER_BASE_URL"
        )
    return reranker


def _logistic(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(value, 50.0), -50.0)))


@dataclass(frozen=True)
class _Loaded:
    tokenizer: Tokenizer
    session: Any
    inputs: frozenset[str]
    output: str
    errors: tuple[type[Exception], ...]


class CrossEncoderReranker:
    """A cross-encoder directory on onnxruntime: ``[CLS] query [SEP] passage [SEP]`` -> logit.

    The directory holds ``tokenizer.json`` (its pair template decides the special tokens
    and token types) and ``model.onnx`` or ``onnx/model.onnx`` with inputs ``input_ids``,
    ``attention_mask`` (and ``token_type_ids`` if the model takes them) and one output of
    shape ``(batch, 1)`` (or ``(batch,)``); a two-label output uses its last column.
    Loaded on first use, thread-safely.

    Raises:
        ConfigurationError: The directory or one of its files is missing.
    """

    def __init__(
        self,
        model: str | Path,
        *,
        threads: int = 1,
        batch_size: int = 32,
        max_length: int = 512,
    ) -> None:
        root = Path(model).expanduser()
        if not root.is_dir():
            raise ConfigurationError(f"cross-encoder directory {root} does not exist")
        self._tokenizer_path = root / "tokenizer.json"
        if not self._tokenizer_path.is_file():
            raise ConfigurationError(f"{root} has no tokenizer.json")
        found = [root / name for name in ("model.onnx", "onnx/model.onnx")]
        onnx = next((path for path in found if path.is_file()), None)
        if onnx is None:
            raise ConfigurationError(f"{root} has no model.onnx (nor onnx/model.onnx)")
        self._onnx = onnx
        self._root = root
        self._threads = threads
        self._batch_size = batch_size
        self._max_length = max_length
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({str(self._root)!r})"

    async def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One logit per passage (CPU work, in a worker thread)."""
        if not passages:
            return []
        return await run_cpu(self.score_sync, query, list(passages))

    def score_sync(self, query: str, passages: Sequence[str]) -> list[float]:
        """The same, in the calling thread."""
        loaded = self._load()
        encodings = loaded.tokenizer.encode_batch([(query, passage) for passage in passages])
        order = sorted(range(len(passages)), key=lambda i: len(encodings[i].ids))
        result = [0.0] * len(passages)
        lengths = [len(encodings[i].ids) for i in order]
        for start, stop in batches(lengths, self._batch_size):
            rows = order[start:stop]
            feeds = model_inputs([encodings[i] for i in rows], 0, loaded.inputs)
            try:
                (logits,) = loaded.session.run([loaded.output], feeds)
            except loaded.errors as exc:
                raise ProviderError(f"onnxruntime failed to run {self._root}: {exc}") from exc
            values = np.asarray(logits, dtype=np.float32).reshape(len(rows), -1)[:, -1]
            for row, index in enumerate(rows):
                result[index] = float(values[row])
        return result

    def _load(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                tokenizer = load_tokenizer(self._tokenizer_path, self._max_length)
                session = load_session(self._onnx, self._threads)
                inputs = frozenset(i.name for i in session.get_inputs())
                output = session.get_outputs()[0].name
                self._loaded = _Loaded(tokenizer, session, inputs, output, onnxruntime_errors())
            return self._loaded


class HttpReranker:
    """A ``/rerank`` server: TEI's shape (``api="tei"``) or vLLM / Jina / Cohere's.

    Args:
        base_url: The server's root; ``/rerank`` is appended (give ``.../v1`` for servers
            that serve it there).
        model: Sent as ``model`` in the Cohere shape (vLLM and Cohere need it).
        api: ``"tei"`` or ``"cohere"``.
        api_key: Sent as a bearer token.
        timeout: Seconds per request.
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api: RerankApi = "cohere",
        api_key: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._url = base_url.rstrip("/") + "/rerank"
        self._model = model
        self._api = api
        self._api_key = api_key
        self._timeout = timeout

    def __repr__(self) -> str:
        return f"HttpReranker({self._url!r}, api={self._api!r}, model={self._model!r})"

    async def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One relevance score per passage, as the server returns them."""
        import httpx

        if not passages:
            return []
        body: dict[str, Any]
        if self._api == "tei":
            body = {"query": query, "texts": list(passages), "raw_scores": False}
        else:
            body = {"query": query, "documents": list(passages), "top_n": len(passages)}
            if self._model:
                body["model"] = self._model
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            async with httpx.AsyncClient(timeout=self._timeout) as client:
                response = await client.post(self._url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise ProviderHTTPError(f"reranker {self._url} did not answer: {exc}") from exc
        if response.status_code >= 400:
            raise ProviderHTTPError(
                f"reranker {self._url} answered {response.status_code}: {response.text[:200]}",
                status_code=response.status_code,
            )
        return _parse_scores(self._url, response.content, len(passages))


def _parse_scores(url: str, content: bytes, count: int) -> list[float]:
    """Scores by index from ``[{"index", "score"}]`` or ``{"results": [...]}``."""
    try:
        data = json.loads(content)
        items = data["results"] if isinstance(data, dict) else data
        scores: list[float | None] = [None] * count
        for item in items:
            value = item.get("relevance_score", item.get("score"))
            scores[int(item["index"])] = float(value)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ProviderOutputError(
            f"reranker {url} answered in an unknown shape: {exc}",
            raw=content[:200].decode(errors="replace"),
        ) from exc
    if any(score is None for score in scores):
        raise ProviderOutputError(f"reranker {url} left some of the {count} passages unscored")
    return [score for score in scores if score is not None]
