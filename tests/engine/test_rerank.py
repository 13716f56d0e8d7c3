"""The rerank stage: a cross-encoder directory (tests/tiny_models.py builds one) and the
``/rerank`` HTTP shapes (a scripted server), alone and through ``search(rerank=...)``."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub._cpu import BACKGROUND_NICE, background
from memhub.errors import ConfigurationError, ProviderHTTPError, ProviderOutputError, UsageError
from memhub.rerank import CrossEncoderReranker, HttpReranker
from tests.tiny_models import build_cross_encoder, reference_cross_encoder

PASSAGES = [
    "my sister lives in paris",
    "i like jazz and hiking",
    "my friend works as a nurse",
    "cats and dogs",
    "the teacher lives in berlin",
]


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("rerank") / "tiny-cross-encoder"
    return root, build_cross_encoder(root)


async def test_cross_encoder_scores_every_pair_as_the_model_says(
    cross_encoder: tuple[Path, dict[str, Any]],
) -> None:
    root, model = cross_encoder
    reranker = CrossEncoderReranker(root, batch_size=2)

    scores = await reranker.score("where does my sister live", PASSAGES)

    expected = [reference_cross_encoder(model, "where does my sister live", p) for p in PASSAGES]
    assert scores == pytest.approx(expected, abs=1e-5)
    assert await reranker.score("x", []) == []


@pytest.mark.skipif(sys.platform != "linux", reason="a nice value per thread")
async def test_cross_encoder_scores_at_the_callers_cpu_priority(
    cross_encoder: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = cross_encoder
    reranker = CrossEncoderReranker(root, batch_size=2)
    nice: list[int] = []
    score_sync = CrossEncoderReranker.score_sync

    def spied(self: CrossEncoderReranker, query: str, passages: Any) -> list[float]:
        nice.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return score_sync(self, query, passages)

    monkeypatch.setattr(CrossEncoderReranker, "score_sync", spied)
    plain = await reranker.score("where does my sister live", PASSAGES)
    with background():  # an over-quota key's request (memhub._cpu)
        niced = await reranker.score("where does my sister live", PASSAGES)
    assert nice == [os.getpriority(os.PRIO_PROCESS, 0), BACKGROUND_NICE]
    assert niced == plain


def test_cross_encoder_directory_errors_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=str(tmp_path / "none")):
        CrossEncoderReranker(tmp_path / "none")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigurationError, match=r"has no tokenizer\.json"):
        CrossEncoderReranker(tmp_path / "empty")


class _Scripted(BaseHTTPRequestHandler):
    answer: Any = None
    status = 200
    seen: ClassVar[list[tuple[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append((self.path, body))
        payload = json.dumps(type(self).answer(body)).encode()
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Scripted]]]:
    handler = type("Handler", (_Scripted,), {"seen": [], "status": 200})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    httpd.shutdown()
    httpd.server_close()


def _by_shared_words(query: str, passages: list[str]) -> list[float]:
    words = set(query.lower().split())
    return [len(words & set(p.split())) / 10 for p in passages]


async def test_tei_and_cohere_shapes(server: tuple[str, type[_Scripted]]) -> None:
    url, handler = server
    # TEI answers a list sorted by score; Cohere / vLLM / Jina an object with results.
    handler.answer = lambda body: sorted(
        (
            {"index": i, "score": s}
            for i, s in enumerate(_by_shared_words(body["query"], body["texts"]))
        ),
        key=lambda item: -item["score"],
    )
    tei = HttpReranker(url, api="tei")
    assert await tei.score("my sister paris", PASSAGES[:3]) == [0.3, 0.0, 0.1]

    handler.answer = lambda body: {
        "results": [
            {"index": i, "relevance_score": s}
            for i, s in enumerate(_by_shared_words(body["query"], body["documents"]))
        ][::-1]
    }
    cohere = HttpReranker(url + "/v1", model="rr", api_key="k")
    assert await cohere.score("nurse", PASSAGES[:3]) == [0.0, 0.0, 0.1]
    path, body = handler.seen[-1]
    assert path == "/v1/rerank"
    assert (body["model"], body["top_n"], body["query"]) == ("rr", 3, "nurse")


async def test_one_http_client_serves_every_call_until_closed() -> None:
    connections: list[object] = []

    class KeptAlive(_Scripted):
        protocol_version = "HTTP/1.1"  # connections stay open between requests
        seen: ClassVar[list[tuple[str, Any]]] = []

        def setup(self) -> None:
            super().setup()
            connections.append(self.connection)

    KeptAlive.answer = lambda body: {"results": [{"index": 0, "relevance_score": 0.5}]}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), KeptAlive)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        reranker = HttpReranker(f"http://127.0.0.1:{httpd.server_address[1]}")
        for _ in range(3):  # three searches' second passes
            assert await reranker.score("q", ["a"]) == [0.5]
        assert len(connections) == 1  # one connection, kept alive between calls
        await reranker.aclose()
        assert await reranker.score("q", ["a"]) == [0.5]  # closed: the next call opens anew
        assert len(connections) == 2
        await reranker.aclose()
    finally:
        httpd.shutdown()
        httpd.server_close()


async def test_http_errors_are_typed(server: tuple[str, type[_Scripted]]) -> None:
    url, handler = server
    handler.answer = lambda body: {"error": "overloaded"}
    handler.status = 503
    with pytest.raises(ProviderHTTPError, match="503") as caught:
        await HttpReranker(url).score("q", ["a"])
    assert caught.value.status_code == 503
    handler.status = 200
    handler.answer = lambda body: {"results": [{"index": 5, "relevance_score": 1}]}
    with pytest.raises(ProviderOutputError):
        await HttpReranker(url).score("q", ["a", "b"])
    with pytest.raises(ProviderHTTPError, match="did not answer"):
        await HttpReranker("http://127.0.0.1:9").score("q", ["a"])


async def test_search_reranks_the_fused_top_through_the_configured_reranker(
    settings: MemhubSettings, server: tuple[str, type[_Scripted]]
) -> None:
    url, handler = server
    handler.answer = lambda body: {
        "results": [
            # Prefers passages that mention a job, whatever the query says.
            {"index": i, "relevance_score": 0.9 if ("nurse" in d or "teacher" in d) else 0.1}
            for i, d in enumerate(body["documents"])
        ]
    }
    configured = settings.model_copy(
        update={"reranker": "cohere", "reranker_base_url": url, "rerank_candidates": 3}
    )
    async with AsyncMemory(settings=settings) as plain:
        for passage in PASSAGES:
            await plain.add(passage, user_id="rr", infer=False)
        await plain.wait_idle()
        fused = (await plain.search("my sister lives in paris", user_id="rr", limit=5))["results"]
        with pytest.raises(UsageError, match="no reranker is configured"):
            await plain.search("x", user_id="rr", rerank=True)
    async with AsyncMemory(settings=configured) as memory:
        reranked = (await memory.search("my sister lives in paris", user_id="rr", limit=5))[
            "results"
        ]
        unchanged = (
            await memory.search("my sister lives in paris", user_id="rr", limit=5, rerank=False)
        )["results"]

    assert [r["memory"] for r in unchanged] == [r["memory"] for r in fused]
    top3 = [r["memory"] for r in fused[:3]]
    jobs = [m for m in top3 if "nurse" in m or "teacher" in m]
    others = [m for m in top3 if m not in jobs]
    # The best three fused results are re-ordered (stable among equals), the rest follow.
    assert [r["memory"] for r in reranked] == jobs + others + [r["memory"] for r in fused[3:]]
    scores = [r["score"] for r in reranked]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert len(handler.seen) == 1 and len(handler.seen[0][1]["documents"]) == 3
