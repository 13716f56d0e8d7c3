"""A LangGraph store with its own ``embed`` keeps its items in a space of its own, beside the
database's default space (docs/langgraph.md).

LangGraph's docstring example embeds with ``init_embeddings("openai:...")``; here the
embeddings are langchain-core's ``DeterministicFakeEmbedding`` (a real LangChain
``Embeddings`` whose vectors are a hash of the text: a search finds an exact text), as no
OpenAI model can run here. The default space beside it embeds with the real MiniLM model.
"""

from __future__ import annotations

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from memhub import MemhubSettings, Memory
from memhub.integrations.langgraph import CallerEmbedder, MemhubStore


def test_langgraphs_docstring_example_runs_beside_the_default_space(
    settings: MemhubSettings,
) -> None:
    index = {"dims": 1536, "embed": DeterministicFakeEmbedding(size=1536), "fields": ["text"]}
    with MemhubStore(index=index, settings=settings) as store, Memory(settings=settings) as main:
        store.put(("docs",), "doc1", {"text": "Python tutorial"})
        store.put(("docs",), "doc2", {"text": "TypeScript guide"})
        main.add("Ada is allergic to peanuts", agent_id="langgraph", infer=False)

        results = store.search(("docs",), query="Python tutorial")
        assert results[0].key == "doc1"
        assert {r.key for r in results} == {"doc1", "doc2"}  # not the default space's memory
        listed = main.get_all(agent_id="langgraph")["results"]
        assert [m["memory"] for m in listed] == ["Ada is allergic to peanuts"]

        # The person's erase, in the default space, reaches the store's space too.
        assert main.delete_all(agent_id="langgraph")["deleted"] == 3
        assert store.search(("docs",), query="Python tutorial") == []


@pytest.mark.parametrize("named", [True, False])
def test_a_sync_and_an_async_function_of_one_model_share_a_space_when_named_alike(
    settings: MemhubSettings, named: bool
) -> None:
    """``index["model"]`` names what a function computes; unnamed, each function's own name
    is its space, so the async twin does not see what the sync one stored."""
    fake = DeterministicFakeEmbedding(size=32)

    def embed_texts(texts: list[str]) -> list[list[float]]:
        return fake.embed_documents(texts)

    async def aembed_texts(texts: list[str]) -> list[list[float]]:
        return await fake.aembed_documents(texts)

    model = {"model": "fake-32"} if named else {}
    with MemhubStore(index={"dims": 32, "embed": embed_texts, **model}, settings=settings) as s:
        s.put(("notes",), "tea", {"text": "Ada likes green tea"})
    with MemhubStore(index={"dims": 32, "embed": aembed_texts, **model}, settings=settings) as s:
        found = [item.key for item in s.search(("notes",), query="Ada likes green tea")]
    assert found == (["tea"] if named else [])


def test_a_default_space_recording_the_stores_embedder_keeps_serving_it(
    settings: MemhubSettings,
) -> None:
    """A database an earlier memhub fixed to the store's embedder (no spaces then): the
    store with that ``embed`` still finds what it kept."""
    fake = DeterministicFakeEmbedding(size=32)
    index = {"dims": 32, "embed": fake, "model": "fake-32"}
    embedder = CallerEmbedder(fake, 32, "fake-32")
    with Memory(settings=settings, embedder=embedder) as earlier:  # the default space
        MemhubStore(earlier).put(("notes",), "tea", {"text": "Ada likes green tea"})
    with MemhubStore(index=index, settings=settings) as store:
        assert [i.key for i in store.search(("notes",), query="Ada likes green tea")] == ["tea"]
