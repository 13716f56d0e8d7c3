"""Embedding spaces: several embedders, one per collection, in one database.

The second embedder is memhub's scripted OpenAI-compatible server (memhub.testing) serving
``/v1/embeddings`` as Ollama's and OpenAI's APIs do: its vectors are a hash of the text, so a
search finds an exact text, not a meaning (a real served model cannot answer
deterministically here). The default space beside it embeds with the real MiniLM model.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from memhub import AsyncMemory, ConfigurationError, MemhubSettings, Memory
from memhub.cli.parser import parse_args
from memhub.cli.reembed import run_reembed
from memhub.memory.reembed import reembed
from memhub.store.postgres.space_names import space_schema
from memhub.testing import ScriptedOpenAIServer


@pytest.fixture
def embedding_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(embedding_dim=768) as server:
        yield server


def cookbook_config(server: ScriptedOpenAIServer, **vector_store: Any) -> dict[str, Any]:
    """Mem0's AI-companion cookbook config, its Ollama server replaced by the scripted one."""
    root = server.base_url.removesuffix("/v1")
    return {
        "vector_store": {
            "provider": "qdrant",
            "config": {"collection_name": "test", "host": "localhost", "port": 6333} | vector_store,
        },
        "llm": {
            "provider": "ollama",
            "config": {"model": "llama3.1:latest", "temperature": 0, "ollama_base_url": root},
        },
        "embedder": {
            "provider": "ollama",
            "config": {"model": "nomic-embed-text:latest", "ollama_base_url": root},
        },
        "version": "v1.1",
    }


@pytest.fixture
def env_database(settings: MemhubSettings, monkeypatch: pytest.MonkeyPatch) -> MemhubSettings:
    """The test's database as the environment's: the cookbook names a qdrant server, which
    memhub replaces by its own database (MEMHUB_DATABASE_URL)."""
    assert settings.database_url is not None
    monkeypatch.setenv("MEMHUB_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("MEMHUB_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("MEMHUB_EMBEDDER", "minilm")
    return settings


def cookbook_memory(config: dict[str, Any]) -> AsyncMemory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the qdrant section's "ignored" warning
        return AsyncMemory(config=config)


async def texts(memory: AsyncMemory, user_id: str) -> set[str]:
    return {m["memory"] for m in (await memory.get_all(user_id=user_id))["results"]}


async def test_cookbook_config_runs_beside_the_default_space(
    env_database: MemhubSettings, embedding_server: ScriptedOpenAIServer, db_url: str
) -> None:
    """No embedding_dims: the 768 dimensions are learnt from one request; each space finds
    only its own memories; delete_all in the collection leaves the default space alone."""
    async with (
        cookbook_memory(cookbook_config(embedding_server)) as companion,
        AsyncMemory(settings=env_database) as default,
    ):
        await companion.add("Ada likes green tea", user_id="ada", infer=False)
        first = embedding_server.embedding_requests[0].json
        assert first is not None and first["input"] == ["dimension probe"]
        await default.add("Ada is allergic to peanuts", user_id="ada", infer=False)

        assert await texts(companion, "ada") == {"Ada likes green tea"}
        assert await texts(default, "ada") == {"Ada is allergic to peanuts"}
        found = await companion.search("Ada likes green tea", user_id="ada")
        assert [r["memory"] for r in found["results"]] == ["Ada likes green tea"]
        found = await default.search("what must Ada not eat?", user_id="ada")
        assert [r["memory"] for r in found["results"]] == ["Ada is allergic to peanuts"]

        probes = [r for r in embedding_server.embedding_requests if r.json == first]
        assert len(probes) == 1  # asked once, whatever was embedded since

        assert (await companion.delete_all(user_id="ada"))["deleted"] == 1
        assert await texts(companion, "ada") == set()
        assert await texts(default, "ada") == {"Ada is allergic to peanuts"}

    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        schema = space_schema("test")
        cur = await conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = %s::regclass AND attname = 'embedding'",
            (f"{schema}.memories",),
        )
        assert await cur.fetchone() == ("vector(768)",)
        cur = await conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'public.memories'::regclass AND attname = 'embedding'"
        )
        assert await cur.fetchone() == ("vector(384)",)


async def test_a_default_space_recording_the_collections_embedder_keeps_serving_it(
    env_database: MemhubSettings, embedding_server: ScriptedOpenAIServer
) -> None:
    """A database whose default space an earlier memhub fixed to the config's embedder (no
    spaces then): the config still finds what it kept there, and no space is made."""
    before_spaces = env_database.model_copy(
        update={
            "embedder": "ollama",
            "embedder_model": "nomic-embed-text:latest",
            "embedder_base_url": embedding_server.base_url.removesuffix("/v1"),
        }
    )
    async with AsyncMemory(settings=before_spaces) as earlier:
        await earlier.add("Ada likes green tea", user_id="ada", infer=False)
    async with cookbook_memory(cookbook_config(embedding_server)) as companion:
        assert await texts(companion, "ada") == {"Ada likes green tea"}
    assert env_database.database_url is not None
    async with await psycopg.AsyncConnection.connect(env_database.database_url) as conn:
        cur = await conn.execute("SELECT to_regnamespace(%s)", (space_schema("test"),))
        assert await cur.fetchone() == (None,)


async def test_mem0_embedding_dims_is_taken_without_a_request(
    env_database: MemhubSettings, embedding_server: ScriptedOpenAIServer
) -> None:
    config = cookbook_config(embedding_server, embedding_model_dims=768)
    async with cookbook_memory(config) as companion:
        assert await texts(companion, "ada") == set()
    assert embedding_server.embedding_requests == []


async def test_a_space_refuses_another_embedder_and_names_itself(
    env_database: MemhubSettings, embedding_server: ScriptedOpenAIServer
) -> None:
    async with cookbook_memory(cookbook_config(embedding_server)) as companion:
        await companion.add("Ada likes green tea", user_id="ada", infer=False)
    other = env_database.model_copy(update={"space": "test"})  # MiniLM, 384 dimensions
    with pytest.raises(ConfigurationError, match="space 'test' of this database holds 768"):
        async with AsyncMemory(settings=other) as memory:
            await memory.get_all(user_id="ada")


async def test_the_default_spaces_erase_reaches_every_space(
    env_database: MemhubSettings, embedding_server: ScriptedOpenAIServer
) -> None:
    """A person's erase (delete_all in the default space: the REST server's, the MCP
    server's) removes them from every space; other users stay."""
    async with (
        cookbook_memory(cookbook_config(embedding_server)) as companion,
        AsyncMemory(settings=env_database) as default,
    ):
        await companion.add("Ada likes green tea", user_id="ada", infer=False)
        await companion.add("Bob likes coffee", user_id="bob", infer=False)
        await default.add("Ada is allergic to peanuts", user_id="ada", infer=False)

        assert (await default.delete_all(user_id="ada"))["deleted"] == 2
        assert await texts(companion, "ada") == set()
        assert await texts(default, "ada") == set()
        assert await texts(companion, "bob") == {"Bob likes coffee"}


async def test_reembed_moves_one_space(
    env_database: MemhubSettings, embedding_server: ScriptedOpenAIServer
) -> None:
    """``reembed`` with a space's settings moves that space to another model; the default
    space keeps its own."""
    space = env_database.model_copy(update={"space": "notes"})
    async with AsyncMemory(settings=space) as notes, AsyncMemory(settings=env_database) as main:
        await notes.add("Ada likes green tea", user_id="ada", infer=False)
        await main.add("Ada is allergic to peanuts", user_id="ada", infer=False)
    served = space.model_copy(
        update={
            "embedder": "openai",
            "embedder_model": "text-embedding-3-small",
            "embedder_base_url": embedding_server.base_url,
            "embedder_api_key": "x",
        }
    )
    assert await reembed(served) == 1
    async with AsyncMemory(settings=served) as notes, AsyncMemory(settings=env_database) as main:
        found = await notes.search("Ada likes green tea", user_id="ada")
        assert [r["memory"] for r in found["results"]] == ["Ada likes green tea"]
        assert await texts(main, "ada") == {"Ada is allergic to peanuts"}


def test_memhub_reembed_space_moves_that_space(
    env_database: MemhubSettings, embedding_server: ScriptedOpenAIServer
) -> None:
    """``memhub reembed --space NAME``: the command line's way to the same move."""
    with Memory(settings=env_database.model_copy(update={"space": "notes"})) as notes:
        notes.add("Ada likes green tea", user_id="ada", infer=False)
    served = env_database.model_copy(
        update={
            "embedder": "openai",
            "embedder_model": "text-embedding-3-small",
            "embedder_base_url": embedding_server.base_url,
            "embedder_api_key": "x",
        }
    )
    assert run_reembed(parse_args(["reembed", "--space", "notes", "--yes"]), served) == 0
    moved = [r.json for r in embedding_server.embedding_requests]
    assert {"model": "text-embedding-3-small", "input": ["Ada likes green tea"]}.items() <= (
        moved[-1] or {}
    ).items()
    with Memory(settings=served.model_copy(update={"space": "notes"})) as notes:
        found = notes.search("Ada likes green tea", user_id="ada")["results"]
        assert [r["memory"] for r in found] == ["Ada likes green tea"]


async def test_a_named_space_behind_pgbouncer_is_refused(settings: MemhubSettings) -> None:
    """PgBouncer in transaction mode keeps no session search_path: refused before any
    connection, naming the reason."""
    pooled = settings.model_copy(update={"space": "notes", "pgbouncer": True})
    with pytest.raises(ConfigurationError, match="PgBouncer"):
        async with AsyncMemory(settings=pooled) as memory:
            await memory.get_all(user_id="ada")
