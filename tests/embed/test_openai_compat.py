"""OpenAIEmbedder over real HTTP against the scripted server of conftest.py.

The scripted server stands in for a real embedding server (OpenAI, vLLM, Ollama, TEI)
because none can run here; the openai SDK, its retries and its timeouts are the real ones.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import numpy as np
import openai
import pytest

from memhub.embed.openai_compat import OpenAIEmbedder
from memhub.errors import ConfigurationError, ProviderHTTPError, ProviderOutputError, UsageError

if TYPE_CHECKING:
    from tests.embed.conftest import ScriptedEmbeddingServer

# Retry-After in milliseconds keeps the SDK's backoff from slowing the tests down.
FAST_RETRY = {"retry-after-ms": "1"}


@pytest.fixture
async def embedder(embedding_server: ScriptedEmbeddingServer) -> AsyncIterator[OpenAIEmbedder]:
    client = OpenAIEmbedder("test-model", base_url=embedding_server.url, max_retries=2, timeout=5)
    yield client
    await client.aclose()


def unit(vector: list[float]) -> np.ndarray[Any, np.dtype[np.float64]]:
    array = np.asarray(vector, dtype=np.float64)
    return array / np.linalg.norm(array)


async def test_embeds_in_order_with_unit_rows(
    embedder: OpenAIEmbedder, embedding_server: ScriptedEmbeddingServer
) -> None:
    texts = ["alpha", "beta", "gamma"]

    vectors = await embedder.embed(texts)

    assert vectors.shape == (3, embedding_server.dimension)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    for text, row in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(row, unit(embedding_server.expected_vector(text)), atol=1e-6)
    (request,) = embedding_server.requests
    assert request.path == "/v1/embeddings"
    assert request.body["model"] == "test-model"
    assert request.body["input"] == texts
    assert request.body["encoding_format"] == "float"
    assert "dimensions" not in request.body


async def test_uses_placeholder_key_without_environment(
    embedding_server: ScriptedEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = OpenAIEmbedder("m", base_url=embedding_server.url)
    await client.embed(["x"])
    await client.aclose()

    assert embedding_server.requests[0].headers["authorization"] == "Bearer not-needed"


async def test_reorders_answers_by_index(
    embedder: OpenAIEmbedder, embedding_server: ScriptedEmbeddingServer
) -> None:
    embedding_server.reverse_order = True

    vectors = await embedder.embed(["first", "second"])

    np.testing.assert_allclose(vectors[0], unit(embedding_server.expected_vector("first")), 1e-6)


async def test_splits_large_inputs_by_batch_size(
    embedding_server: ScriptedEmbeddingServer,
) -> None:
    client = OpenAIEmbedder("m", base_url=embedding_server.url, batch_size=2)
    texts = [f"text {i}" for i in range(5)]

    vectors = await client.embed(texts)
    await client.aclose()

    assert [r.body["input"] for r in embedding_server.requests] == [
        ["text 0", "text 1"],
        ["text 2", "text 3"],
        ["text 4"],
    ]
    np.testing.assert_allclose(vectors[4], unit(embedding_server.expected_vector("text 4")), 1e-6)


async def test_retries_after_server_error(
    embedder: OpenAIEmbedder, embedding_server: ScriptedEmbeddingServer
) -> None:
    embedding_server.script(status=500, body={"error": {"message": "busy"}}, headers=FAST_RETRY)

    vectors = await embedder.embed(["retry me"])

    assert vectors.shape == (1, embedding_server.dimension)
    assert len(embedding_server.requests) == 2


async def test_gives_up_after_max_retries(
    embedder: OpenAIEmbedder, embedding_server: ScriptedEmbeddingServer
) -> None:
    for _ in range(3):
        embedding_server.script(status=503, body={"error": {"message": "down"}}, headers=FAST_RETRY)

    with pytest.raises(ProviderHTTPError) as caught:
        await embedder.embed(["x"])

    assert caught.value.status_code == 503
    assert len(embedding_server.requests) == 3  # the first try and max_retries=2


async def test_client_error_is_not_retried(
    embedder: OpenAIEmbedder, embedding_server: ScriptedEmbeddingServer
) -> None:
    embedding_server.script(status=400, body={"error": {"message": "input too long"}})

    with pytest.raises(ProviderHTTPError, match="input too long") as caught:
        await embedder.embed(["x"])

    assert caught.value.status_code == 400
    assert isinstance(caught.value.__cause__, openai.BadRequestError)
    assert len(embedding_server.requests) == 1


async def test_malformed_json_is_an_output_error(
    embedder: OpenAIEmbedder, embedding_server: ScriptedEmbeddingServer
) -> None:
    embedding_server.script(body='{"data": [')

    with pytest.raises(ProviderOutputError):
        await embedder.embed(["x"])


@pytest.mark.parametrize(
    "body",
    [
        {"object": "list", "data": []},
        {"object": "list"},
        {"data": [{"index": 0, "embedding": "not numbers"}]},
        {"data": [{"index": 0, "embedding": []}]},
        {"data": [{"index": 5, "embedding": [1.0, 2.0]}]},
        {"data": [{"embedding": [1.0, 2.0]}]},
    ],
    ids=["no-rows", "no-data", "not-numbers", "empty-vector", "bad-index", "no-index"],
)
async def test_unusable_answers_are_output_errors(
    embedder: OpenAIEmbedder, embedding_server: ScriptedEmbeddingServer, body: dict[str, Any]
) -> None:
    embedding_server.script(body=body)

    with pytest.raises(ProviderOutputError):
        await embedder.embed(["x"])


async def test_ragged_vectors_are_an_output_error(
    embedder: OpenAIEmbedder, embedding_server: ScriptedEmbeddingServer
) -> None:
    rows = [{"index": 0, "embedding": [1.0, 2.0]}, {"index": 1, "embedding": [1.0]}]
    embedding_server.script(body={"data": rows})

    with pytest.raises(ProviderOutputError):
        await embedder.embed(["x", "y"])


async def test_dimension_is_learned_by_probe_once(
    embedder: OpenAIEmbedder, embedding_server: ScriptedEmbeddingServer
) -> None:
    with pytest.raises(ConfigurationError, match="probe_dimension"):
        _ = embedder.dimension

    assert await embedder.probe_dimension() == embedding_server.dimension
    assert await embedder.probe_dimension() == embedding_server.dimension
    assert embedder.dimension == embedding_server.dimension
    assert len(embedding_server.requests) == 1


async def test_empty_input_needs_no_request(embedding_server: ScriptedEmbeddingServer) -> None:
    client = OpenAIEmbedder("m", base_url=embedding_server.url, dimension=8)

    vectors = await client.embed([])
    await client.aclose()

    assert vectors.shape == (0, 8)
    assert vectors.dtype == np.float32
    assert embedding_server.requests == []


async def test_empty_input_with_unknown_dimension_is_refused(embedder: OpenAIEmbedder) -> None:
    with pytest.raises(ConfigurationError):
        await embedder.embed([])


async def test_vectors_of_another_length_are_refused(
    embedding_server: ScriptedEmbeddingServer,
) -> None:
    client = OpenAIEmbedder("m", base_url=embedding_server.url, dimension=16)

    with pytest.raises(ProviderOutputError, match="length 8, expected 16"):
        await client.embed(["x"])
    await client.aclose()


async def test_send_dimensions_puts_it_in_the_request(
    embedding_server: ScriptedEmbeddingServer,
) -> None:
    client = OpenAIEmbedder("m", base_url=embedding_server.url, dimension=8, send_dimensions=True)

    await client.embed(["x"])
    await client.aclose()

    assert embedding_server.requests[0].body["dimensions"] == 8


async def test_timeout_is_an_http_error(
    embedding_server: ScriptedEmbeddingServer,
) -> None:
    client = OpenAIEmbedder("m", base_url=embedding_server.url, timeout=0.1, max_retries=0)
    embedding_server.script(body={"data": []}, delay=0.5)

    with pytest.raises(ProviderHTTPError) as caught:
        await client.embed(["x"])
    await client.aclose()

    assert caught.value.status_code is None
    assert isinstance(caught.value.__cause__, openai.APITimeoutError)


async def test_unreachable_server_is_an_http_error() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago and has no listener
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)

    with pytest.raises(ProviderHTTPError) as caught:
        await client.embed(["x"])
    await client.aclose()

    assert caught.value.status_code is None


async def test_bare_string_is_a_usage_error(embedder: OpenAIEmbedder) -> None:
    with pytest.raises(UsageError):
        await embedder.embed("not a list")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model": ""},
        {"model": "m", "dimension": 0},
        {"model": "m", "batch_size": 0},
        {"model": "m", "timeout": 0},
        {"model": "m", "max_retries": -1},
        {"model": "m", "send_dimensions": True},
    ],
)
def test_invalid_arguments_are_usage_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        OpenAIEmbedder(**kwargs)
