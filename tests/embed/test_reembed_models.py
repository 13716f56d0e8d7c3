"""``memhub reembed`` between two in-process models: MiniLM -> a model directory -> MiniLM.

The model directory is tests/tiny_models.py's (32 dimensions, built by the test), so the
real directory loading, the real database swap and the real MiniLM run end to end.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import psycopg
import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.cli.reembed import LineProgress
from memhub.errors import ConfigurationError
from memhub.memory.reembed import reembed
from tests.tiny_models import build_encoder

FACTS = ["I like jazz", "my sister lives in Paris", "my friend works as a nurse", "cats and dogs"]


async def _columns(db_url: str) -> list[tuple[str]]:
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'memories'::regclass AND attname LIKE 'embedding%'"
            " AND NOT attisdropped"
        )
        return await cur.fetchall()


async def test_reembed_minilm_to_a_model_directory_and_back(
    settings: MemhubSettings, db_url: str, tmp_path: Path
) -> None:
    async with AsyncMemory(settings=settings) as memory:
        for fact in FACTS:
            await memory.add(fact, user_id="ada", infer=False)
        await memory.wait_idle()
    build_encoder(tmp_path / "tiny")
    tiny = settings.model_copy(update={"embedder_model": str(tmp_path / "tiny")})
    out = io.StringIO()

    # Broken directories: one clear error naming the path, and the database untouched.
    shutil.copytree(tmp_path / "tiny", tmp_path / "broken")
    (tmp_path / "broken" / "tokenizer.json").unlink()
    for model, dims in (
        (tmp_path / "broken", None),
        (tmp_path / "nowhere", None),
        (tmp_path / "tiny", 64),
    ):
        wrong = settings.model_copy(
            update={"embedder_model": str(model), "embedder_dimension": dims}
        )
        with pytest.raises(ConfigurationError, match=str(model)):
            await reembed(wrong, progress=LineProgress(out))
        assert await _columns(db_url) == [("vector(384)",)]

    assert await reembed(tiny, progress=LineProgress(out)) == len(FACTS)
    assert await _columns(db_url) == [("vector(32)",)]
    async with AsyncMemory(settings=tiny) as memory:
        hits = (await memory.search("my sister lives in Paris", user_id="ada", limit=1))["results"]
        assert hits[0]["memory"] == "my sister lives in Paris"
    with pytest.raises(ConfigurationError, match="memhub reembed"):
        async with AsyncMemory(settings=settings) as memory:
            await memory.search("jazz", user_id="ada")

    assert await reembed(settings, progress=LineProgress(out)) == len(FACTS)
    assert await _columns(db_url) == [("vector(384)",)]
    async with AsyncMemory(settings=settings) as memory:
        hits = (await memory.search("who is a nurse", user_id="ada", limit=1))["results"]
        assert hits[0]["memory"] == "my friend works as a nurse"
    assert "now uses tiny (32)" in out.getvalue()
