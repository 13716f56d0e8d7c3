"""Mem0's config dicts, as Mem0's documentation writes them, build a working memhub."""

from __future__ import annotations

import pytest

from memhub import AsyncMemory, ConfigurationError, Memory, UsageError
from memhub.memory.mem0_config import settings_from_mem0_config


def test_mem0_pgvector_example_maps_to_a_url() -> None:
    # Mem0's pgvector example (docs: components/vectordbs/dbs/pgvector).
    config = {
        "vector_store": {
            "provider": "pgvector",
            "config": {
                "user": "test",
                "password": "123",
                "host": "127.0.0.1",
                "port": "5432",
                "collection_name": "memories",
                "embedding_model_dims": 384,
            },
        }
    }
    settings = settings_from_mem0_config(config)
    assert settings.database_url == "postgresql://test:123@127.0.0.1:5432/postgres"


def test_arkos_config_maps_embedder_and_llm() -> None:
    config = {
        "vector_store": {
            "provider": "supabase",
            "config": {
                "connection_string": "postgresql://u:p@db:5432/arkos",
                "collection_name": "memories",
                "index_method": "hnsw",
                "index_measure": "cosine_distance",
            },
        },
        "llm": {
            "provider": "vllm",
            "config": {
                "model": "Qwen/Qwen2.5-7B-Instruct",
                "vllm_base_url": "http://localhost:30000/v1",
            },
        },
        "embedder": {
            "provider": "huggingface",
            "config": {"huggingface_base_url": "http://localhost:4444/v1"},
        },
        "custom_fact_extraction_prompt": "Only remember food preferences.",
    }
    settings = settings_from_mem0_config(config)
    assert settings.database_url == "postgresql://u:p@db:5432/arkos"
    assert (settings.llm_provider, settings.llm_model, settings.llm_base_url) == (
        "vllm",
        "Qwen/Qwen2.5-7B-Instruct",
        "http://localhost:30000/v1",
    )
    assert (settings.embedder, settings.embedder_base_url) == (
        "huggingface",
        "http://localhost:4444/v1",
    )
    assert settings.custom_instructions == "Only remember food preferences."
    assert settings.llm_configured


def test_local_huggingface_minilm_is_the_bundled_model() -> None:
    settings = settings_from_mem0_config(
        {
            "embedder": {
                "provider": "huggingface",
                "config": {"model": "sentence-transformers/all-MiniLM-L6-v2"},
            }
        }
    )
    assert settings.embedder == "minilm"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"vectorstore": {}}, "unknown config keys"),
        ({"llm": "openai"}, "must be"),
    ],
)
def test_bad_configs_are_clear_errors(config: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        settings_from_mem0_config(config)


def test_from_config_runs_end_to_end(db_url: str) -> None:
    memory = Memory.from_config(
        {"vector_store": {"provider": "pgvector", "config": {"connection_string": db_url}}}
    )
    memory.add("I am allergic to peanuts.", user_id="zoe", infer=False, wait=True)
    hits = memory.search("food allergies", user_id="zoe", limit=1)["results"]
    assert hits[0]["memory"] == "I am allergic to peanuts."
    memory.close()
    assert isinstance(AsyncMemory.from_config({}), AsyncMemory)


def test_another_vector_store_runs_on_memhubs_postgresql_with_one_warning(db_url: str) -> None:
    from memhub.memory.mem0_config import Mem0ConfigWarning

    # Mem0's examples/misc/vllm_example.py config, as a migrating user has it.
    config = {
        "llm": {
            "provider": "vllm",
            "config": {"model": "Qwen/Qwen2.5-32B-Instruct", "vllm_base_url": "http://x:8000/v1"},
        },
        "vector_store": {"provider": "qdrant", "config": {"host": "localhost", "port": 6333}},
    }
    with pytest.warns(Mem0ConfigWarning) as caught:
        settings = settings_from_mem0_config(config)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "config['vector_store'] (provider 'qdrant') is ignored" in message
    assert "MEMHUB_DATABASE_URL" in message and "pgvector" in message
    assert settings.llm_base_url == "http://x:8000/v1"
    assert settings.database_url is None or "6333" not in settings.database_url
    with pytest.warns(Mem0ConfigWarning, match=r"config\['graph_store'\] is ignored"):
        settings_from_mem0_config({"graph_store": {"provider": "neo4j", "config": {}}})


async def test_async_memory_takes_config_as_mem0s_does(db_url: str) -> None:
    """Mem0's ``AsyncMemory(config=...)``: the same settings as ``from_config``."""
    config = {"vector_store": {"provider": "pgvector", "config": {"connection_string": db_url}}}
    async with AsyncMemory(config=config) as memory:
        assert memory.settings == AsyncMemory.from_config(config).settings
        await memory.add("I am allergic to kiwis.", user_id="kai", infer=False, wait=True)
        hits = (await memory.search("food allergies", user_id="kai", limit=1))["results"]
        assert hits[0]["memory"] == "I am allergic to kiwis."
    with pytest.raises(UsageError, match="not both"):
        AsyncMemory(config=config, settings=AsyncMemory.from_config(config).settings)
    with pytest.raises(UsageError, match="config dict"):
        AsyncMemory(config=["not", "a", "config"])  # type: ignore[arg-type]


def test_a_mem0_memory_config_object_is_read_without_a_warning(
    db_url: str, recwarn: pytest.WarningsRecorder
) -> None:
    """Mem0 2.2.1's ``MemoryConfig`` (checked against the real package, not installed in the
    suite's venv) types ``vector_store.config`` as a dict but holds a model there, so a plain
    ``model_dump()`` warns. This stand-in has the same shape."""
    from pydantic import BaseModel

    class PGVectorConfig(BaseModel):
        connection_string: str
        collection_name: str = "mem0"

    class VectorStoreConfig(BaseModel):
        provider: str
        config: dict[str, object]

    class MemoryConfig(BaseModel):
        vector_store: VectorStoreConfig

    store = VectorStoreConfig.model_construct(
        provider="pgvector", config=PGVectorConfig(connection_string=db_url)
    )
    memory = AsyncMemory(config=MemoryConfig.model_construct(vector_store=store))  # type: ignore[arg-type]
    assert memory.settings.database_url == db_url
    assert [str(w.message) for w in recwarn] == []
