"""A ``/rerank`` server: Hugging Face TEI's shape, or the one vLLM, Jina and Cohere serve.

TEI: ``{"query", "texts"}`` -> ``[{"index", "score"}]``; the others: ``{"model", "query",
"documents"}`` -> ``{"results": [{"index", "relevance_score"}]}``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from memhub.errors import ProviderHTTPError, ProviderOutputError

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpReranker", "RerankApi"]

RerankApi = Literal["tei", "cohere"]


class HttpReranker:
    """A ``/rerank`` server: TEI's shape (``api="tei"``) or vLLM / Jina / Cohere's.

    One HTTP client, opened on first use, serves every call (its connections are kept
    alive between searches) until :meth:`aclose`; one event loop's, as the services that
    build it are.

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
        self._client: httpx.AsyncClient | None = None

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
            if self._client is None:
                self._client = httpx.AsyncClient(timeout=self._timeout)
            response = await self._client.post(self._url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise ProviderHTTPError(f"reranker {self._url} did not answer: {exc}") from exc
        if response.status_code >= 400:
            raise ProviderHTTPError(
                f"reranker {self._url} answered {response.status_code}: {response.text[:200]}",
                status_code=response.status_code,
            )
        return _parse_scores(self._url, response.content, len(passages))

    async def aclose(self) -> None:
        """Close the HTTP client (a later call opens another)."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


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
