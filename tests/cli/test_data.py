"""``memhub import``, ``export`` and ``reembed`` against a real database."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.cli import main
from memhub.cli.export import export_jsonl
from memhub.cli.imports import import_jsonl
from memhub.cli.parser import build_parser
from memhub.cli.reembed import LineProgress
from memhub.errors import ConfigurationError, UsageError
from memhub.memory.reembed import reembed as _reembed
from memhub.testing import ScriptedOpenAIServer, deterministic_embedding


async def reembed(settings: MemhubSettings, *, stream: io.StringIO, **options: Any) -> int:
    return await _reembed(settings, progress=LineProgress(stream), **options)


def dispatch(argv: list[str], settings: MemhubSettings) -> int:
    assert settings.database_url is not None
    return main(["--database-url", settings.database_url, *argv])


def parse(*argv: str) -> list[str]:
    build_parser().parse_args(argv)  # every argument is known
    return list(argv)


def write_lines(path: Path, *lines: object) -> Path:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    )
    return path


async def texts(settings: MemhubSettings, user_id: str) -> list[str]:
    async with AsyncMemory(settings=settings) as memory:
        found = await memory.get_all(user_id=user_id)
    return sorted(m["memory"] for m in found["results"])


async def test_import_adds_good_lines_and_reports_bad_ones(
    settings: MemhubSettings, tmp_path: Path
) -> None:
    path = write_lines(
        tmp_path / "in.jsonl",
        {"user_id": "ada", "text": "Ada likes green tea", "metadata": {"src": "crm"}},
        '{"user_id": "ada", "text": ',
        {"user_id": 7, "text": "not a string id"},
        "",
        {"user_id": "ada", "messages": [{"role": "user", "content": "I live in Oslo"}]},
        {"user_id": "ada", "content": "hi", "text": "both"},
        {"messages": "I run marathons"},
        ["not", "an", "object"],
        {"user_id": "ada", "text": "when", "timestamp": "yesterday"},
    )
    err = io.StringIO()
    report = await import_jsonl(
        settings, path, user_id="ben", infer=False, stream=err, skip_bad=True
    )
    assert report.lines == 8 and report.added == 3
    assert [where for where, _ in report.bad] == ["line 2", "line 3", "line 6", "line 8", "line 9"]
    log = err.getvalue()
    assert "line 2: not valid JSON" in log
    assert "line 3: user_id must be a string" in log
    assert "line 6: needs exactly one of" in log
    assert "line 8: expected a JSON object" in log
    assert "line 9: timestamp 'yesterday' is not ISO 8601" in log
    assert await texts(settings, "ada") == ["Ada likes green tea", "I live in Oslo"]
    assert await texts(settings, "ben") == ["I run marathons"]


def test_import_command_exits_1_on_bad_lines(
    settings: MemhubSettings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "in.jsonl", {"text": "fine"}, "{oops")
    argv = parse("import", str(path), "--user-id", "u", "--no-infer", "--skip-bad")
    assert dispatch(argv, settings) == 1
    assert "imported 1 of 2 items; 1 bad (line 2)" in capsys.readouterr().err
    assert dispatch(parse("import", str(path), "--no-wait", "--restart"), settings) == 1
    assert (
        "line 1: names no user_id, agent_id or run_id (pass --user-id)" in capsys.readouterr().err
    )
    good = write_lines(tmp_path / "good.jsonl", {"text": "also fine"})
    assert dispatch(parse("import", str(good), "--user-id", "u", "--batch", "1"), settings) == 0


@pytest.fixture
def seeded(settings: MemhubSettings) -> MemhubSettings:
    return settings


async def seed(settings: MemhubSettings) -> None:
    async with AsyncMemory(settings=settings) as memory:
        for n in range(5):
            # Two pairs share a timestamp: pagination must neither skip nor repeat them.
            await memory.add(
                f"fact number {n}",
                user_id="ada",
                metadata={"n": n, "tags": ["x"]},
                infer=False,
                timestamp=f"2024-01-0{1 + n // 2}T10:00:00+00:00",
            )
        await memory.add("someone else's", user_id="bob", infer=False)
        await memory.wait_idle()


async def test_export_round_trips_through_import(settings: MemhubSettings, tmp_path: Path) -> None:
    await seed(settings)
    out = io.StringIO()
    assert await export_jsonl(settings, "ada", out, page_size=2) == 5
    exported = [json.loads(line) for line in out.getvalue().splitlines()]
    assert sorted(m["memory"] for m in exported) == [f"fact number {n}" for n in range(5)]
    assert {m["user_id"] for m in exported} == {"ada"}
    async with AsyncMemory(settings=settings) as memory:
        await memory.delete_all(user_id="ada")
    path = tmp_path / "ada.jsonl"
    path.write_text(out.getvalue())
    report = await import_jsonl(settings, path, infer=True, stream=io.StringIO())
    assert (report.added, report.bad) == (5, [])
    async with AsyncMemory(settings=settings) as memory:
        again = (await memory.get_all(user_id="ada"))["results"]
    key = lambda m: m["memory"]  # noqa: E731
    for before, after in zip(sorted(exported, key=key), sorted(again, key=key), strict=True):
        assert after["created_at"] == before["created_at"]
        assert after["metadata"]["n"] == before["metadata"]["n"]
        assert after["metadata"]["tags"] == ["x"]


def test_export_command_writes_a_file(
    settings: MemhubSettings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memhub._portal import run_sync

    run_sync(seed(settings))
    target = tmp_path / "out.jsonl"
    assert dispatch(parse("export", "--user-id", "bob", "-o", str(target)), settings) == 0
    assert [json.loads(x)["memory"] for x in target.read_text().splitlines()] == ["someone else's"]
    assert "exported 1 memories of bob" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.partial"))


async def test_import_reads_a_mem0_json_list(settings: MemhubSettings, tmp_path: Path) -> None:
    items = [
        {
            "id": "m1",
            "memory": "Likes jazz",
            "user_id": "cy",
            "metadata": {"k": 1},
            "created_at": "2023-05-01T12:00:00-07:00",
            "hash": "abc",
        },
        {
            "id": "m2",
            "memory": "Old address",
            "user_id": "cy",
            "valid_to": "2024-01-01T00:00:00Z",
            "created_at": "2023-01-01T00:00:00Z",
        },
        {"memory": 42, "user_id": "cy"},
    ]
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(items, indent=2))
    report = await import_jsonl(settings, path, stream=io.StringIO(), skip_bad=True)
    assert (report.added, report.superseded, [w for w, _ in report.bad]) == (1, 1, ["item 3"])
    async with AsyncMemory(settings=settings) as memory:
        (item,) = (await memory.get_all(user_id="cy"))["results"]
    assert item["memory"] == "Likes jazz"
    assert item["created_at"].startswith("2023-05-01T19:00:00")
    assert item["metadata"]["k"] == 1


@pytest.fixture
def embedding_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(embedding_dim=16) as server:
        yield server


async def test_reembed_moves_the_database_to_a_new_embedder(
    settings: MemhubSettings, embedding_server: ScriptedOpenAIServer, db_url: str
) -> None:
    await seed(settings)
    scripted = settings.model_copy(
        update={
            "embedder": "vllm",
            "embedder_model": "scripted-embedder",
            "embedder_base_url": embedding_server.base_url,
            "embedder_dimension": 16,
            "embedder_api_key": "test",
        }
    )
    with pytest.raises(ConfigurationError, match="memhub reembed"):
        async with AsyncMemory(settings=scripted) as memory:
            await memory.search("fact", user_id="ada")

    asked: list[str] = []
    with pytest.raises(UsageError, match="cancelled"):
        await reembed(scripted, confirm=lambda q: asked.append(q) or False, stream=io.StringIO())
    assert "from all-MiniLM-L6-v2 (384 dimensions) to scripted-embedder (16 dimensions)" in asked[0]

    assert await reembed(scripted, batch=4, stream=io.StringIO()) == 6
    async with AsyncMemory(settings=scripted) as memory:
        hits = (await memory.search("fact number 3", user_id="ada", limit=2))["results"]
        assert hits[0]["memory"] == "fact number 3"
        await memory.add("a new fact", user_id="ada", infer=False, wait=True)
    with pytest.raises(ConfigurationError, match="memhub reembed"):
        async with AsyncMemory(settings=settings) as memory:
            await memory.search("fact", user_id="ada")
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'memories'::regclass AND attname LIKE 'embedding%'"
            " AND NOT attisdropped"
        )
        assert await cur.fetchall() == [("vector(16)",)]
        cur = await conn.execute(
            "SELECT indexname FROM pg_indexes WHERE indexdef LIKE '%hnsw%' ORDER BY 1"
        )
        # the memories' and the passages' (a long memory's windows), under their own names
        assert await cur.fetchall() == [
            ("memories_embedding_hnsw",),
            ("memory_passages_embedding_hnsw",),
        ]
        cur = await conn.execute("SELECT count(*) FROM memories WHERE embedding IS NULL")
        assert await cur.fetchone() == (0,)
    out = io.StringIO()
    assert await reembed(scripted, stream=out) == 0
    assert "already embedded with scripted-embedder (16)" in out.getvalue()

    # And back again, with the same dimension logic the other way round.
    assert await reembed(settings, stream=io.StringIO()) == 7
    assert "fact number 3" in await texts(settings, "ada")


async def test_reembed_resumes_an_interrupted_run(
    settings: MemhubSettings, embedding_server: ScriptedOpenAIServer
) -> None:
    from memhub.store.postgres import reembed as pg_reembed
    from memhub.store.postgres.database import acquire_database, release_database
    from memhub.store.records import EmbeddedText

    await seed(settings)
    scripted = settings.model_copy(
        update={
            "embedder": "vllm",
            "embedder_model": "scripted-embedder",
            "embedder_base_url": embedding_server.base_url,
            "embedder_dimension": 16,
        }
    )
    database = await acquire_database(settings)
    try:
        async with database.connection() as conn:
            assert not await pg_reembed.prepare(conn, "scripted-embedder", 16)
            rows = await pg_reembed.pending_rows(conn, None, 2)
            # What the interrupted run wrote: the scripted server's vectors of these texts.
            vectors = np.array([deterministic_embedding(r.memory, 16) for r in rows], np.float32)
            await pg_reembed.store_vectors(conn, rows, [EmbeddedText(v) for v in vectors])
            # Text changed after its new vector was written: the swap re-embeds it.
            await conn.execute(
                "UPDATE memories SET memory = 'fact changed', hash = 'h', updated_at = now()"
                " WHERE id = %s",
                (next(r.id for r in rows if r.memory.startswith("fact")),),
            )
    finally:
        await release_database(database)
    out = io.StringIO()
    assert await reembed(scripted, stream=out) == 4 + 1
    assert "resuming" in out.getvalue()
    async with AsyncMemory(settings=scripted) as memory:
        hits = (await memory.search("fact changed", user_id="ada", limit=1))["results"]
    assert hits[0]["memory"] == "fact changed"
    assert hits[0]["score"] > 0.5
